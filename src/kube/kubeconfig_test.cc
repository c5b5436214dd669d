#include "kube/kubeconfig.h"

#include <gtest/gtest.h>

#include "common/strings.h"
#include "kube/connection.h"
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
                  "users:\n- name: u\n  user: {auth-provider: {name: gcp}}\n")
                .find("The gcp auth plugin has been removed"),
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

TEST(KubeconfigTest, ContextChoosesAnotherContextThanTheCurrentOne) {
  Result<ConnectionConfig> conn =
      ParseKubeconfig(kTwoContexts, "/etc/kube", "k", {.context = "dev"});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "http://127.0.0.1:8080");
  EXPECT_EQ(conn->token, "dev-token");
  EXPECT_EQ(conn->origin, "k context dev");
  Result<ConnectionConfig> unknown = ParseKubeconfig(kTwoContexts, "", "k", {.context = "staging"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(
      unknown.status().message().find("context \"staging\" is not among contexts[] (dev, prod)"),
      std::string::npos)
      << unknown.status().message();
}

// KUBECONFIG=a:missing:b:c as kubectl merges it: a cluster, context or user from the first file
// that names it, current-context from the first file that sets one, paths relative to their file.
TEST(KubeconfigTest, KubeconfigListIsMergedFirstDefinitionWins) {
  TempDir dir;
  std::string a = dir.Write("a/config", R"(clusters:
- name: shared
  cluster: {server: "https://from-a:6443", certificate-authority: ca-a.crt}
users:
- name: alice
  user: {tokenFile: token-a}
)");
  std::string b = dir.Write("b/config", R"(current-context: work
clusters:
- name: shared
  cluster: {server: "https://from-b:6443"}
contexts:
- name: work
  context: {cluster: shared, user: alice}
- name: other
  context: {cluster: shared, user: bob}
users:
- name: alice
  user: {token: from-b}
- name: bob
  user: {tokenFile: token-b}
)");
  std::string c = dir.Write("c/config", R"(current-context: other
contexts:
- name: work
  context: {cluster: nowhere, user: nobody}
)");
  Environment env = {{"KUBECONFIG", a + ":" + dir.path() + "/missing:" + b + ":" + c}};
  Result<ConnectionConfig> conn = ResolveConnection("", env, dir.path() + "/sa");
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://from-a:6443");
  EXPECT_EQ(conn->ca_file, dir.path() + "/a/ca-a.crt");
  EXPECT_EQ(conn->token_file, dir.path() + "/a/token-a");
  EXPECT_TRUE(conn->token.empty());
  EXPECT_EQ(conn->origin, "kubeconfig " + b + " context work");

  Result<ConnectionConfig> other =
      ResolveConnection("", env, dir.path() + "/sa", {.context = "other"});
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->token_file, dir.path() + "/b/token-b");

  // The first file that sets current-context wins even when a later one sets another.
  env["KUBECONFIG"] = c + ":" + b;
  Result<ConnectionConfig> from_c = ResolveConnection("", env, dir.path() + "/sa");
  ASSERT_TRUE(from_c.ok()) << from_c.status().ToString();
  EXPECT_EQ(from_c->token_file, dir.path() + "/b/token-b");  // context other, user bob
}

TEST(KubeconfigTest, ContextWithoutAnyKubeconfigIsAnError) {
  TempDir dir;
  Result<ConnectionConfig> conn =
      ResolveConnection("", {{"HOME", dir.path()}}, dir.path() + "/sa", {.context = "prod"});
  ASSERT_FALSE(conn.ok());
  EXPECT_NE(conn.status().message().find("context \"prod\""), std::string::npos);
}

TEST(KubeconfigTest, ExecUserBecomesAnExecPlugin) {
  std::string text = std::string(R"(current-context: c
clusters:
- name: k
  cluster:
    server: https://k:443
    certificate-authority-data: )") +
                     Base64Encode("CA PEM") + R"(
    tls-server-name: api.k
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: k8s}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--region, eu-1]
      env: [{name: AWS_PROFILE, value: prod}]
      interactiveMode: Never
      provideClusterInfo: true
      installHint: install get-token
)";
  Result<ConnectionConfig> conn = ParseKubeconfig(text, "/etc/kube", "k");
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  ASSERT_TRUE(conn->exec.has_value());
  const ExecConfig& exec = *conn->exec;
  EXPECT_EQ(exec.api_version, kExecApiV1);
  EXPECT_EQ(exec.command, "/etc/kube/./bin/get-token");
  EXPECT_EQ(exec.args, (std::vector<std::string>{"--region", "eu-1"}));
  ASSERT_EQ(exec.env.size(), 1u);
  EXPECT_EQ(exec.env[0], (std::pair<std::string, std::string>{"AWS_PROFILE", "prod"}));
  EXPECT_EQ(exec.interactive_mode, "Never");
  EXPECT_EQ(exec.install_hint, "install get-token");
  EXPECT_TRUE(exec.provide_cluster_info);
  EXPECT_EQ(exec.cluster["server"], "https://k:443");
  EXPECT_EQ(exec.cluster["tls-server-name"], "api.k");
  EXPECT_EQ(exec.cluster["certificate-authority-data"], Base64Encode("CA PEM"));
  EXPECT_EQ(exec.cluster["config"]["audience"], "k8s");

  // A command without '/' is looked up on PATH; v1beta1 defaults to IfAvailable.
  std::string beta = text;
  beta.replace(beta.find("client.authentication.k8s.io/v1"), 31,
               "client.authentication.k8s.io/v1beta1");
  beta.replace(beta.find("./bin/get-token"), 15, "aws");
  beta.replace(beta.find("      interactiveMode: Never\n"), 29, "");
  conn = ParseKubeconfig(beta, "/etc/kube", "k");
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->exec->command, "aws");
  EXPECT_EQ(conn->exec->interactive_mode, "IfAvailable");
}

TEST(KubeconfigTest, ExecErrorsNameTheField) {
  auto error = [](const std::string& exec) {
    std::string text =
        "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
        "clusters:\n- name: k\n  cluster: {server: https://x}\n"
        "users:\n- name: u\n  user: {exec: " +
        exec + "}\n";
    Result<ConnectionConfig> conn = ParseKubeconfig(text, "", "kubeconfig x");
    EXPECT_FALSE(conn.ok()) << exec;
    return conn.status().message();
  };
  EXPECT_NE(error("{apiVersion: client.authentication.k8s.io/v1alpha1, command: aws}")
                .find("v1alpha1\" is not supported"),
            std::string::npos);
  EXPECT_NE(error("{apiVersion: client.authentication.k8s.io/v1, command: aws}")
                .find("interactiveMode must be set"),
            std::string::npos);
  EXPECT_NE(error("{apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}")
                .find("exec has no command"),
            std::string::npos);
  EXPECT_NE(error("{apiVersion: client.authentication.k8s.io/v1, command: aws, "
                  "interactiveMode: Sometimes}")
                .find("\"Sometimes\" is not one of"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::kube
