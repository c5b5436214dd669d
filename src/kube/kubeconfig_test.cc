#include "kube/kubeconfig.h"

#include <gtest/gtest.h>

#include "common/strings.h"
#include "kube/temp_dir_for_test.h"

namespace tessera::kube {
namespace {

constexpr const char* kTwoContexts = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: dev-cluster
  cluster:
    server: http://127.0.0.1:8080
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority: certs/ca.crt
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user}
- name: prod
  context:
    cluster: prod-cluster
    user: prod-user
users:
- name: dev-user
  user: {token: dev-token}
- name: prod-user
  user:
    client-certificate: /abs/client.crt
    client-key: keys/client.key
    tokenFile: token
)";

TEST(KubeconfigTest, CurrentContextWithFilesRelativeToTheKubeconfig) {
  Result<ConnectionConfig> conn = ParseKubeconfig(kTwoContexts, "/etc/kube", "kubeconfig test");
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://10.0.0.1:6443");
  EXPECT_EQ(conn->ca_file, "/etc/kube/certs/ca.crt");
  EXPECT_EQ(conn->client_cert_file, "/abs/client.crt");
  EXPECT_EQ(conn->client_key_file, "/etc/kube/keys/client.key");
  EXPECT_EQ(conn->token_file, "/etc/kube/token");
  EXPECT_FALSE(conn->insecure_skip_tls_verify);
  EXPECT_EQ(conn->origin, "kubeconfig test context prod");
}

TEST(KubeconfigTest, DataFieldsAreDecodedIntoMemory) {
  std::string text = std::string(R"(current-context: c
clusters:
- name: k
  cluster:
    server: https://k:443
    certificate-authority-data: )") +
                     Base64Encode("CA PEM") + R"(
    insecure-skip-tls-verify: true
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    token: abc
    client-certificate-data: )" +
                     Base64Encode("CERT PEM") + R"(
    client-key-data: )" +
                     Base64Encode("KEY PEM") + "\n";
  Result<ConnectionConfig> conn = ParseKubeconfig(text, "", "k");
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->ca_pem, "CA PEM");
  EXPECT_EQ(conn->client_cert_pem, "CERT PEM");
  EXPECT_EQ(conn->client_key_pem, "KEY PEM");
  EXPECT_TRUE(conn->ca_file.empty());
  EXPECT_TRUE(conn->insecure_skip_tls_verify);
  EXPECT_EQ(conn->token, "abc");
}

TEST(KubeconfigTest, ErrorsNameWhatIsMissing) {
  auto error = [](const std::string& text) {
    Result<ConnectionConfig> conn = ParseKubeconfig(text, "", "kubeconfig x");
    EXPECT_FALSE(conn.ok());
    return conn.status().message();
  };
  EXPECT_NE(error("clusters: []\n").find("current-context is not set"), std::string::npos);
  EXPECT_NE(error("current-context: nope\ncontexts: []\n").find("\"nope\" is not among contexts"),
            std::string::npos);
  EXPECT_NE(error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: gone}\n")
                .find("cluster \"gone\", which is not among clusters"),
            std::string::npos);
  EXPECT_NE(error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                  "clusters:\n- name: k\n  cluster: {server: ftp://x}\n")
                .find("must start with https:// or http://"),
            std::string::npos);
  EXPECT_NE(error("current-context: [unclosed\n").find("not valid YAML"), std::string::npos);
  EXPECT_NE(error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                  "clusters:\n- name: k\n  cluster: {server: https://x}\n"
                  "users:\n- name: u\n  user: {exec: {command: aws}}\n")
                .find("exec/auth-provider plugins"),
            std::string::npos);
  EXPECT_NE(error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                  "clusters:\n- name: k\n  cluster: {server: https://x}\n"
                  "users:\n- name: u\n  user: {client-certificate: a.crt}\n")
                .find("must be given together"),
            std::string::npos);
  EXPECT_NE(error("current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                  "clusters:\n- name: k\n  cluster: {server: https://x, "
                  "certificate-authority-data: '***'}\n")
                .find("not valid base64"),
            std::string::npos);
}

TEST(KubeconfigTest, LoadsAFileAndAnchorsPathsAtItsFolder) {
  TempDir dir;
  std::string path = dir.Write("sub/config", kTwoContexts);
  Result<ConnectionConfig> conn = LoadKubeconfigFile(path);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->ca_file, dir.path() + "/sub/certs/ca.crt");
  EXPECT_EQ(LoadKubeconfigFile(dir.path() + "/absent").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::kube
