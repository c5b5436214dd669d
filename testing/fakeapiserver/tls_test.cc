// HTTPS with a client certificate: certificates made with the openssl CLI in a temp folder.
#include <cstdlib>
#include <filesystem>

#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

class FakeApiServerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fakeapi-tls-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    const std::string d = dir_.string();
    // CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA.
    const std::string script =
        "set -e; cd '" + d +
        "'; "
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca "
        "  -keyout ca.key -out ca.crt; "
        "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key "
        "  -out server.csr; "
        "printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext; "
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 "
        "  -extfile san.ext -out server.crt; "
        "openssl req -newkey rsa:2048 -nodes -subj /CN=tessera-client -keyout client.key "
        "  -out client.csr; "
        "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 "
        "  -out client.crt";
    const std::string command = "sh -c \"" + script + "\" > '" + d + "/openssl.log' 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << "openssl failed; see " << d << "/openssl.log";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string F(const char* name) { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(FakeApiServerTlsTest, ClientCertificateRequiredAndAccepted) {
  FakeApiServer::Options options;
  options.tls_cert = F("server.crt");
  options.tls_key = F("server.key");
  options.client_ca = F("ca.crt");
  auto server = FakeApiServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_EQ((*server)->url().rfind("https://127.0.0.1:", 0), 0u);

  TestClient with_cert((*server)->url(), F("ca.crt"), F("client.crt"), F("client.key"));
  HttpAnswer ok = with_cert.Post("/api/v1/namespaces/default/pods", PodJson("p1"));
  EXPECT_EQ(ok.status, 201) << ok.body.dump();

  TestClient without_cert((*server)->url(), F("ca.crt"));
  EXPECT_EQ(without_cert.Get("/api/v1/pods").status, 0);  // handshake refused
}

TEST_F(FakeApiServerTlsTest, HttpsWithoutClientCa) {
  FakeApiServer::Options options;
  options.tls_cert = F("server.crt");
  options.tls_key = F("server.key");
  auto server = FakeApiServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TestClient client((*server)->url(), F("ca.crt"));
  EXPECT_EQ(client.Get("/api/v1/namespaces").status, 200);
}

TEST(FakeApiServerStartTest, BadOptionsAreReported) {
  FakeApiServer::Options options;
  options.listen = "nonsense";
  EXPECT_EQ(FakeApiServer::Start(options).status().code(), StatusCode::kInvalidArgument);
  options.listen = "127.0.0.1:99999";
  EXPECT_EQ(FakeApiServer::Start(options).status().code(), StatusCode::kInvalidArgument);
  options.listen = "127.0.0.1:0";
  options.tls_cert = "/nonexistent/cert.pem";
  EXPECT_EQ(FakeApiServer::Start(options).status().code(), StatusCode::kInvalidArgument);
  options.tls_key = "/nonexistent/key.pem";
  EXPECT_EQ(FakeApiServer::Start(options).status().code(), StatusCode::kUnavailable);
}

TEST(FakeApiServerStartTest, PortInUseIsUnavailable) {
  auto first = FakeApiServer::Start({});
  ASSERT_TRUE(first.ok());
  FakeApiServer::Options options;
  options.listen = "127.0.0.1:" + std::to_string((*first)->port());
  EXPECT_EQ(FakeApiServer::Start(options).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera::testing
