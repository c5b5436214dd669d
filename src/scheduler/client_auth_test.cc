// Client authentication on the scheduler's endpoints (scheduler.tls.client-ca): who may call the
// extender and the webhooks, and what everyone else is told. Each test is named after what it
// stops or allows.
#include <unistd.h>

#include <httplib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "scheduler/engine.h"
#include "scheduler/extender.h"
#include "scheduler/fake_binder.h"
#include "scheduler/http_server.h"
#include "scheduler/test_objects.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;

// A CA; the server's certificate for 127.0.0.1; client certificates: the second kube-scheduler,
// the API server's webhook client, one that carries its name only as a DNS subjectAltName, one
// for serverAuth only, and one of another CA.
constexpr char kMakeCertificates[] = R"(set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $1.key; }
sign() { # NAME SUBJECT EXTENSIONS CA
  key $1
  openssl req -new -key $1.key -out $1.csr -subj "$2"
  printf "$3" > $1.ext
  openssl x509 -req -in $1.csr -CA $4.crt -CAkey $4.key -CAcreateserial -days 1 \
    -extfile $1.ext -out $1.crt
}
for ca in ca other-ca; do
  key $ca
  openssl req -x509 -new -key $ca.key -out $ca.crt -days 1 -subj /CN=$ca
done
sign server /CN=127.0.0.1 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' ca
client='extendedKeyUsage=clientAuth\n'
sign kube-scheduler /CN=tessera-kube-scheduler "$client" ca
sign apiserver /CN=kube-apiserver-webhook-client "$client" ca
sign by-dns /CN=someone 'subjectAltName=DNS:tessera-kube-scheduler\nextendedKeyUsage=clientAuth\n' ca
sign server-only /CN=tessera-kube-scheduler 'extendedKeyUsage=serverAuth\n' ca
sign stranger /CN=tessera-kube-scheduler "$client" other-ca
)";

class ClientAuth : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tessera-client-auth-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "make.sh") << kMakeCertificates;
    std::string command = "cd '" + dir_.string() + "' && bash make.sh > openssl.log 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << "openssl failed; see " << dir_;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // Serves with the CA as client CA, kube-scheduler for the extender and the API server's
  // client for the webhooks (as deploy/ and the dev cluster configure it).
  void Serve(std::vector<std::string> extender = {"tessera-kube-scheduler"},
             std::vector<std::string> webhook = {"kube-apiserver-webhook-client"}) {
    ServerOptions options{.listen = "127.0.0.1:0",
                          .tls_cert = File("server.crt"),
                          .tls_key = File("server.key"),
                          .client_ca = File("ca.crt"),
                          .extender_clients = std::move(extender),
                          .webhook_clients = std::move(webhook)};
    server_.emplace(options, extender_, webhook_, state_, metrics_);
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.message();
    server_->SetReady(true);
  }

  static std::string File(const std::string& name) { return (dir_ / name).string(); }

  // A client that presents certificate `name` (none when empty).
  std::unique_ptr<httplib::SSLClient> Client(const std::string& name = "") {
    auto client = name.empty()
                      ? std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port())
                      : std::make_unique<httplib::SSLClient>(
                            "127.0.0.1", server_->port(), File(name + ".crt"), File(name + ".key"));
    client->set_ca_cert_path(File("ca.crt"));
    client->enable_server_certificate_verification(true);
    client->set_connection_timeout(2, 0);
    client->set_read_timeout(2, 0);
    return client;
  }

  static std::string FilterBody() {
    return json{{"Pod", testing::MakePod("p", {{"nvidia.com/gpumem", 1024}})},
                {"Nodes", nullptr},
                {"NodeNames", {"n"}}}
        .dump();
  }
  static std::string ReviewBody() {
    return testing::MakeReview(testing::MakePod("p", {{"nvidia.com/gpumem", 1024}})).dump();
  }

  static fs::path dir_;
  ClusterState state_{DialectConfig{}};
  Metrics metrics_;
  testing::FakeBinder binder_;
  Engine engine_{state_, binder_, {}, &metrics_};
  Extender extender_{engine_, state_, metrics_};
  Webhook webhook_{state_, "tessera"};
  std::optional<HttpServer> server_;
};

fs::path ClientAuth::dir_;

TEST_F(ClientAuth, BindWithoutAClientCertificateIsRefusedNamingWhoMayCall) {
  Serve();
  auto client = Client();
  httplib::Result r = client->Post("/bind", "{}", "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("tessera-kube-scheduler"));
  EXPECT_THAT(r->body, HasSubstr("scheduler.tls.extender-clients"));
  EXPECT_THAT(r->body, HasSubstr("presented none"));
  for (const char* path : {"/filter", "/prioritize"}) {
    r = client->Post(path, FilterBody(), "application/json");
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 403) << path;
  }
  EXPECT_THAT(metrics_.Render(state_.Snapshot()),
              HasSubstr("tessera_scheduler_unauthorized_requests_total 3"));
}

TEST_F(ClientAuth, HealthMetricsAndInspectServeClientsWithoutACertificate) {
  Serve();
  auto client = Client();
  for (const char* path : {"/healthz", "/readyz", "/metrics", "/inspect"}) {
    httplib::Result r = client->Get(path);
    ASSERT_TRUE(r) << path << ": " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200) << path;
  }
}

TEST_F(ClientAuth, KubeSchedulersCertificateMayFilterButNotValidate) {
  Serve();
  auto client = Client("kube-scheduler");
  httplib::Result r = client->Post("/filter", FilterBody(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  r = client->Post("/validate", ReviewBody(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("kube-apiserver-webhook-client"));
  EXPECT_THAT(r->body, HasSubstr("presented one for tessera-kube-scheduler"));
}

TEST_F(ClientAuth, ApiServersCertificateMayValidateAndMutateButNotBind) {
  Serve();
  auto client = Client("apiserver");
  for (const char* path : {"/validate", "/mutate"}) {
    httplib::Result r = client->Post(path, ReviewBody(), "application/json");
    ASSERT_TRUE(r) << path << ": " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
  }
  httplib::Result r = client->Post("/bind", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
}

TEST_F(ClientAuth, NameGivenAsDnsSubjectAltNameIsAccepted) {
  Serve();
  httplib::Result r = Client("by-dns")->Post("/filter", FilterBody(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(ClientAuth, CertificateOfAnotherCaFailsTheHandshake) {
  Serve();
  httplib::Result r = Client("stranger")->Post("/filter", FilterBody(), "application/json");
  EXPECT_FALSE(r) << "answered " << r->status;
  // The server goes on serving.
  r = Client("kube-scheduler")->Post("/filter", FilterBody(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ClientAuth, ServerOnlyCertificateIsNoClientCertificate) {
  Serve();
  httplib::Result r = Client("server-only")->Post("/filter", FilterBody(), "application/json");
  EXPECT_FALSE(r) << "answered " << r->status;
}

TEST_F(ClientAuth, WildcardTakesAnyCertificateOfTheCaButNotNone) {
  Serve({"*"});
  EXPECT_EQ(Client("apiserver")->Post("/filter", FilterBody(), "application/json")->status, 200);
  EXPECT_EQ(Client()->Post("/filter", FilterBody(), "application/json")->status, 403);
}

TEST_F(ClientAuth, EmptyWebhookClientsAskNoCertificateOfTheApiServer) {
  Serve({"tessera-kube-scheduler"}, {});
  httplib::Result r = Client()->Post("/validate", ReviewBody(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Client()->Post("/bind", "{}", "application/json")->status, 403);
}

TEST_F(ClientAuth, ClientCaThatIsNoCertificateIsRefusedAtStart) {
  std::ofstream(dir_ / "bad-ca.crt") << "not a CA\n";
  ServerOptions options{.listen = "127.0.0.1:0",
                        .tls_cert = File("server.crt"),
                        .tls_key = File("server.key"),
                        .client_ca = File("bad-ca.crt"),
                        .extender_clients = {"tessera-kube-scheduler"}};
  HttpServer server(options, extender_, webhook_, state_, metrics_);
  Status s = server.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("bad-ca.crt"));
}

TEST_F(ClientAuth, ClientCaWithoutHttpsIsRefusedAtStart) {
  ServerOptions options{.listen = "127.0.0.1:0", .client_ca = File("ca.crt")};
  HttpServer server(options, extender_, webhook_, state_, metrics_);
  Status s = server.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("scheduler.tls.cert"));
}

}  // namespace
}  // namespace tessera::scheduler
