// What the API server receives from a Client for each way of logging in: Impersonate-* headers on
// every request, basic auth over https (and refused over http), the oidc auth-provider's id-token
// (refreshed from a fake issuer once expired, and written back to the kubeconfig), and a --token
// flag that wins over the kubeconfig user's exec plugin. A RecordingProxy in front of the fake API
// server records the headers.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include "common/strings.h"
#include "kube/client.h"
#include "kube/connection.h"
#include "kube/fake_server_for_test.h"
#include "kube/recording_proxy_for_test.h"
#include "kube/temp_dir_for_test.h"

namespace tessera::kube {
namespace {

class ClientAuthHeadersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartFakeServer();
    ASSERT_NE(server_, nullptr);
  }

  static std::unique_ptr<Client> MustCreate(const ConnectionConfig& connection) {
    Result<std::unique_ptr<Client>> client = Client::Create(connection, {.qps = 0});
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }

  // A JWT whose exp is `from_now` away.
  static std::string IdToken(std::chrono::seconds from_now) {
    auto exp = std::chrono::duration_cast<std::chrono::seconds>(
                   (std::chrono::system_clock::now() + from_now).time_since_epoch())
                   .count();
    std::string payload = Base64Encode("{\"exp\":" + std::to_string(exp) + "}");
    while (!payload.empty() && payload.back() == '=') payload.pop_back();
    return "eyJhbGciOiJSUzI1NiJ9." + payload + ".c2ln";
  }

  TempDir dir_;
  std::unique_ptr<testing::FakeApiServer> server_;
};

TEST_F(ClientAuthHeadersTest, ImpersonationHeadersGoWithEveryRequest) {
  RecordingProxy proxy(server_->url());
  std::unique_ptr<Client> client = MustCreate(
      {.server = proxy.url(),
       .token = "t",
       .impersonate = {.user = "system:serviceaccount:ml:trainer",
                       .uid = "42",
                       .groups = {"dev", "ops"},
                       .extra = {{"scopes.example.com/team", {"gpu", "ml"}}, {"a b%", {"z"}}}},
       .origin = "test"});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Create(kPods, "default", PodObject("default", "p1")).ok());
  ASSERT_TRUE(client->Get(kPods, "default", "p1").ok());
  ASSERT_TRUE(client->List(kNodes, {}).ok());
  ASSERT_TRUE(client->PatchLabels(kPods, "default", "p1", {{"tier", "gpu"}}).ok());
  ASSERT_TRUE(client->Delete(kPods, "default", "p1").ok());

  std::vector<RecordingProxy::Received> received = proxy.received();
  ASSERT_EQ(received.size(), 5u);
  for (const RecordingProxy::Received& r : received) {
    SCOPED_TRACE(r.method + " " + r.target);
    EXPECT_EQ(r.Values("Impersonate-User"),
              std::vector<std::string>{"system:serviceaccount:ml:trainer"});
    EXPECT_EQ(r.Values("Impersonate-Uid"), std::vector<std::string>{"42"});
    EXPECT_EQ(r.Values("Impersonate-Group"), (std::vector<std::string>{"dev", "ops"}));
    // Extra keys escaped as client-go escapes them in a header name.
    EXPECT_EQ(r.Values("Impersonate-Extra-scopes.example.com%2Fteam"),
              (std::vector<std::string>{"gpu", "ml"}));
    EXPECT_EQ(r.Values("Impersonate-Extra-a%20b%25"), std::vector<std::string>{"z"});
    EXPECT_EQ(r.Value("Authorization"), "Bearer t");  // the caller's own credentials stay
  }

  // Without impersonation no Impersonate-* header is sent.
  std::unique_ptr<Client> plain = MustCreate({.server = proxy.url(), .origin = "test"});
  ASSERT_TRUE(plain->List(kNodes, {}).ok());
  RecordingProxy::Received last = proxy.received().back();
  for (const auto& [name, value] : last.headers) {
    EXPECT_FALSE(StartsWith(ToLower(name), "impersonate-")) << name << ": " << value;
  }
}

TEST_F(ClientAuthHeadersTest, BasicAuthOverHttps) {
  ASSERT_TRUE(MakeSelfSignedCertificate(dir_.path())) << "openssl failed";
  RecordingProxy proxy(server_->url(), dir_.path() + "/server.crt", dir_.path() + "/server.key");
  ASSERT_TRUE(StartsWith(proxy.url(), "https://"));
  std::unique_ptr<Client> client = MustCreate({.server = proxy.url(),
                                               .ca_file = dir_.path() + "/server.crt",
                                               .username = "ann",
                                               .password = "s3cret:with-colon",
                                               .origin = "test"});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->List(kNodes, {}).ok());
  ASSERT_TRUE(client->List(kPods, {.ns = "default"}).ok());
  std::vector<RecordingProxy::Received> received = proxy.received();
  ASSERT_EQ(received.size(), 2u);
  for (const RecordingProxy::Received& r : received) {
    std::string header = r.Value("Authorization");
    ASSERT_TRUE(StartsWith(header, "Basic ")) << header;
    EXPECT_EQ(Base64Decode(header.substr(6)).value_or(""), "ann:s3cret:with-colon");
  }
}

TEST_F(ClientAuthHeadersTest, BasicAuthIsRefusedOverPlainHttp) {
  RecordingProxy proxy(server_->url());
  Result<std::unique_ptr<Client>> client =
      Client::Create({.server = proxy.url(), .username = "ann", .password = "p", .origin = "o"});
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(client.status().message().find("o: basic auth (username ann) is not sent to " +
                                           proxy.url() + ": over plain http the password"),
            std::string::npos)
      << client.status().message();
  EXPECT_TRUE(proxy.received().empty());
}

// Without a refresh-token an expired id-token is an error that says to log in again.
TEST_F(ClientAuthHeadersTest, OidcIdTokenIsTheBearerTokenUntilItExpires) {
  RecordingProxy proxy(server_->url());
  auto kubeconfig = [&](const std::string& id_token) {
    return dir_.Write("config",
                      "current-context: c\n"
                      "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                      "clusters: [{name: k, cluster: {server: '" +
                          proxy.url() +
                          "'}}]\n"
                          "users:\n- name: u\n  user:\n    auth-provider:\n      name: oidc\n"
                          "      config: {idp-issuer-url: 'https://idp.example', client-id: k8s, "
                          "id-token: '" +
                          id_token + "'}\n");
  };
  std::string valid = IdToken(std::chrono::hours(1));
  Result<ConnectionConfig> connection = ResolveConnection(kubeconfig(valid), {});
  ASSERT_TRUE(connection.ok()) << connection.status().ToString();
  std::unique_ptr<Client> client = MustCreate(*connection);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->List(kNodes, {}).ok());
  ASSERT_EQ(proxy.received().size(), 1u);
  EXPECT_EQ(proxy.received()[0].Value("Authorization"), "Bearer " + valid);

  connection = ResolveConnection(kubeconfig(IdToken(-std::chrono::minutes(5))), {});
  ASSERT_TRUE(connection.ok()) << connection.status().ToString();
  Result<std::unique_ptr<Client>> expired = Client::Create(*connection, {.qps = 0});
  ASSERT_FALSE(expired.ok());
  EXPECT_NE(expired.status().message().find("auth-provider oidc id-token expired at"),
            std::string::npos)
      << expired.status().message();
  EXPECT_EQ(proxy.received().size(), 1u);
}

// An OpenID Connect issuer: discovery and a token endpoint that trades the refresh token
// `refresh_token` (for client k8s, secret s3) for `id_token` and the refresh token "r2".
class FakeIssuer {
 public:
  FakeIssuer(std::string refresh_token, std::string id_token)
      : refresh_token_(std::move(refresh_token)), id_token_(std::move(id_token)) {
    server_.Get("/.well-known/openid-configuration", [this](const httplib::Request&,
                                                            httplib::Response& res) {
      res.set_content(R"({"issuer":")" + url() + R"(","token_endpoint":")" + url() + "/token\"}",
                      "application/json");
    });
    server_.Post("/token", [this](const httplib::Request& req, httplib::Response& res) {
      std::map<std::string, std::string> form;
      std::stringstream pairs(req.body);
      for (std::string pair; std::getline(pairs, pair, '&');) {
        size_t eq = pair.find('=');
        form[pair.substr(0, eq)] = eq == std::string::npos ? "" : pair.substr(eq + 1);
      }
      ++token_requests_;
      if (form["grant_type"] != "refresh_token" || form["refresh_token"] != refresh_token_ ||
          form["client_id"] != "k8s" || form["client_secret"] != "s3") {
        res.status = 400;
        res.set_content(R"({"error":"invalid_grant"})", "application/json");
        return;
      }
      std::string answer = R"({"access_token":"a","token_type":"Bearer","refresh_token":"r2")";
      if (!id_token_.empty()) answer += ",\"id_token\":\"" + id_token_ + "\"";
      res.set_content(answer + "}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~FakeIssuer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int token_requests() const { return token_requests_; }

 private:
  const std::string refresh_token_, id_token_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> token_requests_{0};
};

TEST_F(ClientAuthHeadersTest, AnExpiredOidcIdTokenIsRefreshedAndWrittenBack) {
  RecordingProxy proxy(server_->url());
  const std::string fresh = IdToken(std::chrono::hours(1));
  FakeIssuer issuer("r1", fresh);
  auto write_kubeconfig = [&](const std::string& refresh_token) {
    return dir_.Write("config",
                      "current-context: c\n"
                      "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                      "clusters: [{name: k, cluster: {server: '" +
                          proxy.url() +
                          "'}}]\n"
                          "users:\n- name: u\n  user:\n    auth-provider:\n      name: oidc\n"
                          "      config:\n        idp-issuer-url: " +
                          issuer.url() +
                          "\n        client-id: k8s\n        client-secret: s3\n"
                          "        id-token: " +
                          IdToken(-std::chrono::minutes(5)) +
                          "\n        refresh-token: " + refresh_token + "\n");
  };
  std::string path = write_kubeconfig("r1");
  chmod(path.c_str(), 0600);
  Result<ConnectionConfig> connection = ResolveConnection(path, {});
  ASSERT_TRUE(connection.ok()) << connection.status().ToString();
  std::unique_ptr<Client> client = MustCreate(*connection);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->List(kNodes, {}).ok());
  EXPECT_EQ(proxy.received().at(0).Value("Authorization"), "Bearer " + fresh);
  EXPECT_EQ(issuer.token_requests(), 1);

  // The kubeconfig now holds the new tokens (the next run, and kubectl, use them), mode kept.
  Result<ConnectionConfig> reread = ResolveConnection(path, {});
  ASSERT_TRUE(reread.ok()) << reread.status().ToString();
  ASSERT_TRUE(reread->oidc.has_value());
  EXPECT_EQ(reread->oidc->id_token, fresh);
  EXPECT_EQ(reread->oidc->refresh_token, "r2");
  EXPECT_EQ(reread->server, proxy.url());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(stat((path + ".lock").c_str(), &st), 0) << "the lock file was left behind";
  ASSERT_NE(MustCreate(*reread), nullptr);
  EXPECT_EQ(issuer.token_requests(), 1);  // a valid token is not refreshed

  // An issuer that refuses the refresh token: the error says so and the file stays as it was.
  path = write_kubeconfig("spent");
  std::ifstream before_file(path);
  std::string before((std::istreambuf_iterator<char>(before_file)), {});
  connection = ResolveConnection(path, {});
  ASSERT_TRUE(connection.ok()) << connection.status().ToString();
  Result<std::unique_ptr<Client>> refused = Client::Create(*connection, {.qps = 0});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("failed to refresh token: " + issuer.url() +
                                            "/token answered HTTP 400"),
            std::string::npos)
      << refused.status().message();
  std::ifstream after_file(path);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(after_file)), {}), before);
}

TEST_F(ClientAuthHeadersTest, ARefreshAnswerWithoutIdTokenIsAnError) {
  FakeIssuer issuer("r1", "");
  std::string kubeconfig =
      "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
      "clusters: [{name: k, cluster: {server: '" +
      server_->url() +
      "'}}]\nusers:\n- name: u\n  user:\n    auth-provider:\n      name: oidc\n"
      "      config: {idp-issuer-url: '" +
      issuer.url() + "', client-id: k8s, client-secret: s3, refresh-token: r1}\n";
  // Given as text (kube.kubeconfig with a newline): refreshed tokens would stay in memory.
  Result<ConnectionConfig> connection = ResolveConnection(kubeconfig, {});
  ASSERT_TRUE(connection.ok()) << connection.status().ToString();
  Result<std::unique_ptr<Client>> client = Client::Create(*connection, {.qps = 0});
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("token response did not contain an id_token"),
            std::string::npos)
      << client.status().message();
  EXPECT_EQ(issuer.token_requests(), 1);
}

// kubectl's precedence: the --token flag over the kubeconfig user's exec plugin (which never runs)
// and over its tokenFile, and --as over the user's as.
TEST_F(ClientAuthHeadersTest, FlagsWinOverTheKubeconfigUser) {
  RecordingProxy proxy(server_->url());
  std::string plugin =
      dir_.Write("get-token", "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran\"\nexit 1\n");
  chmod(plugin.c_str(), 0755);
  std::string kubeconfig = dir_.Write(
      "config",
      "current-context: c\n"
      "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
      "clusters: [{name: k, cluster: {server: '" +
          proxy.url() +
          "'}}]\n"
          "users:\n- name: u\n  user:\n    as: from-kubeconfig\n    as-groups: [kube-group]\n"
          "    exec: {apiVersion: client.authentication.k8s.io/v1, command: ./get-token, "
          "interactiveMode: Never}\n");
  Result<ConnectionConfig> connection =
      ResolveConnection(kubeconfig, {}, kServiceAccountDir, {.token = "flag-token", .as = "jane"});
  ASSERT_TRUE(connection.ok()) << connection.status().ToString();
  std::unique_ptr<Client> client = MustCreate(*connection);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->List(kNodes, {}).ok());
  RecordingProxy::Received r = proxy.received().at(0);
  EXPECT_EQ(r.Value("Authorization"), "Bearer flag-token");
  EXPECT_EQ(r.Values("Impersonate-User"), std::vector<std::string>{"jane"});
  EXPECT_EQ(r.Values("Impersonate-Group"), std::vector<std::string>{"kube-group"});
  std::ifstream ran(dir_.path() + "/ran");
  EXPECT_FALSE(ran.good()) << "the exec plugin ran although --token was given";

  // Without the flag the kubeconfig's exec plugin is the credential (here it fails).
  connection = ResolveConnection(kubeconfig, {});
  ASSERT_TRUE(connection.ok()) << connection.status().ToString();
  EXPECT_FALSE(Client::Create(*connection, {.qps = 0}).ok());
}

}  // namespace
}  // namespace tessera::kube
