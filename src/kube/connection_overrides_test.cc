// kubectl's connection flags over a kubeconfig (kube/connection_overrides.h): --cluster and --user
// choose entries, the field flags win over the kubeconfig and the kubeconfig over the defaults,
// flags alone make a connection, and kubectl's credential rules and auth-provider messages.
#include "kube/connection_overrides.h"

#include <gtest/gtest.h>

#include "common/strings.h"
#include "kube/connection.h"
#include "kube/kubeconfig.h"
#include "kube/temp_dir_for_test.h"

namespace tessera::kube {
namespace {

constexpr const char* kConfig = R"(current-context: c
contexts:
- name: c
  context: {cluster: main, user: alice}
clusters:
- name: main
  cluster:
    server: https://main:6443
    certificate-authority-data: Q0EgUEVN
- name: spare
  cluster: {server: "https://spare:6443", insecure-skip-tls-verify: true}
users:
- name: alice
  user: {tokenFile: alice-token}
- name: bob
  user: {client-certificate: bob.crt, client-key: bob.key}
- name: carol
  user:
    username: carol
    password: pa:ss
    as: jane
    as-uid: "1001"
    as-groups: [dev, ops]
    as-user-extra:
      scopes.example.com/team: [gpu, ml]
)";

Result<ConnectionConfig> Parse(const ConnectionOverrides& overrides, const char* text = kConfig) {
  return ParseKubeconfig(text, "/etc/kube", "kubeconfig k", overrides);
}

std::string Error(const ConnectionOverrides& overrides, const char* text = kConfig) {
  Result<ConnectionConfig> conn = Parse(overrides, text);
  EXPECT_FALSE(conn.ok());
  return conn.status().message();
}

TEST(ConnectionOverridesTest, WithoutFlagsTheContextDecides) {
  Result<ConnectionConfig> conn = Parse({});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://main:6443");
  EXPECT_EQ(conn->ca_pem, "CA PEM");
  EXPECT_FALSE(conn->insecure_skip_tls_verify);  // the default
  EXPECT_EQ(conn->token_file, "/etc/kube/alice-token");
  EXPECT_TRUE(conn->impersonate.empty());
}

TEST(ConnectionOverridesTest, ClusterAndUserChooseOtherEntries) {
  Result<ConnectionConfig> conn = Parse({.cluster = "spare", .user = "bob"});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://spare:6443");
  EXPECT_TRUE(conn->ca_pem.empty());
  EXPECT_TRUE(conn->insecure_skip_tls_verify);
  EXPECT_TRUE(conn->token_file.empty());
  EXPECT_EQ(conn->client_cert_file, "/etc/kube/bob.crt");
  EXPECT_EQ(conn->origin, "kubeconfig k context c cluster spare user bob");
}

TEST(ConnectionOverridesTest, UnknownClusterOrUserNamesItAndListsWhatIsThere) {
  EXPECT_NE(Error({.cluster = "prod"})
                .find("cluster \"prod\" (--cluster) is not among clusters[] (main, spare)"),
            std::string::npos);
  EXPECT_NE(Error({.user = "root"})
                .find("user \"root\" (--user) is not among users[] (alice, bob, carol)"),
            std::string::npos);
}

TEST(ConnectionOverridesTest, FieldFlagsWinOverTheKubeconfig) {
  Result<ConnectionConfig> conn = Parse({.server = "https://flag:443/",
                                         .certificate_authority = "/flag/ca.crt",
                                         .token = "flag-token",
                                         .as = "admin",
                                         .as_groups = {"system:masters"}});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://flag:443");
  EXPECT_EQ(conn->ca_file, "/flag/ca.crt");
  EXPECT_TRUE(conn->ca_pem.empty());  // the flag's CA replaces certificate-authority-data
  EXPECT_EQ(conn->token, "flag-token");
  EXPECT_TRUE(conn->token_file.empty());  // and the flag's token the tokenFile
  EXPECT_EQ(conn->impersonate.user, "admin");
  EXPECT_EQ(conn->impersonate.groups, std::vector<std::string>{"system:masters"});

  // --insecure-skip-tls-verify clears the kubeconfig's CA, as kubectl does.
  conn = Parse({.insecure_skip_tls_verify = true});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_TRUE(conn->insecure_skip_tls_verify);
  EXPECT_TRUE(conn->ca_pem.empty());
  // --certificate-authority clears the cluster's insecure-skip-tls-verify.
  conn = Parse({.cluster = "spare", .certificate_authority = "/flag/ca.crt"});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_FALSE(conn->insecure_skip_tls_verify);

  EXPECT_NE(Error({.certificate_authority = "/ca", .insecure_skip_tls_verify = true})
                .find("--certificate-authority and --insecure-skip-tls-verify were both given"),
            std::string::npos);
  EXPECT_NE(Error({.server = "10.0.0.1:6443"}).find("--server 10.0.0.1:6443: must start with"),
            std::string::npos);
}

TEST(ConnectionOverridesTest, ImpersonationAndBasicAuthFromTheKubeconfigUser) {
  Result<ConnectionConfig> conn = Parse({.user = "carol"});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->username, "carol");
  EXPECT_EQ(conn->password, "pa:ss");
  EXPECT_EQ(conn->impersonate.user, "jane");
  EXPECT_EQ(conn->impersonate.uid, "1001");
  EXPECT_EQ(conn->impersonate.groups, (std::vector<std::string>{"dev", "ops"}));
  EXPECT_EQ(conn->impersonate.extra.at("scopes.example.com/team"),
            (std::vector<std::string>{"gpu", "ml"}));
  // Each flag replaces its own field only.
  conn = Parse({.user = "carol", .password = "new", .as_groups = {"qa"}});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->username, "carol");
  EXPECT_EQ(conn->password, "new");
  EXPECT_EQ(conn->impersonate.user, "jane");
  EXPECT_EQ(conn->impersonate.groups, std::vector<std::string>{"qa"});
}

TEST(ConnectionOverridesTest, FlagsAloneWithoutAKubeconfig) {
  TempDir dir;
  const Environment no_kubeconfig = {{"HOME", dir.path()}};
  Result<ConnectionConfig> conn = ResolveConnection("", no_kubeconfig, dir.path() + "/sa",
                                                    {.server = "https://flag:6443", .token = "t"});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://flag:6443");
  EXPECT_EQ(conn->token, "t");
  EXPECT_EQ(conn->origin, "--server https://flag:6443");

  Result<ConnectionConfig> none = ResolveConnection("", no_kubeconfig, dir.path() + "/sa", {});
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("give --server"), std::string::npos);
  Result<ConnectionConfig> named =
      ResolveConnection("", no_kubeconfig, dir.path() + "/sa", {.user = "bob"});
  EXPECT_NE(named.status().message().find("user \"bob\" was asked for, but no kubeconfig"),
            std::string::npos)
      << named.status().ToString();

  // In a pod, --token replaces the service account's token.
  dir.Write("sa/token", "sa-token");
  Environment in_pod = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                        {"KUBERNETES_SERVICE_PORT", "443"}};
  conn = ResolveConnection("", in_pod, dir.path() + "/sa", {.token = "flag"});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://10.0.0.1:443");
  EXPECT_EQ(conn->token, "flag");
  EXPECT_TRUE(conn->token_file.empty());
}

TEST(ConnectionOverridesTest, AKubeconfigWithoutContextWorksWithServerOrCluster) {
  const char* no_context = "clusters: [{name: main, cluster: {server: 'https://main:6443'}}]\n";
  EXPECT_NE(Error({}, no_context).find("current-context is not set"), std::string::npos);
  Result<ConnectionConfig> conn = Parse({.cluster = "main"}, no_context);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://main:6443");
  conn = Parse({.server = "https://flag:6443"}, no_context);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://flag:6443");
}

TEST(ConnectionOverridesTest, CredentialRulesAreKubectls) {
  auto check = [](ConnectionConfig conn) {
    conn.origin = "kubeconfig k";
    if (conn.server.empty()) conn.server = "https://k:443";
    return CheckCredentials(conn).message();
  };
  EXPECT_EQ(check({.token = "t"}), "");
  EXPECT_NE(check({.token = "t", .username = "u", .password = "p"})
                .find("more than one authentication method found; found [token basicAuth]"),
            std::string::npos);
  EXPECT_NE(check({.token_file = "/f", .username = "u"}).find("more than one authentication"),
            std::string::npos);
  EXPECT_NE(check({.password = "p"}).find("a password without a username"), std::string::npos);
  EXPECT_NE(check({.impersonate = {.groups = {"g"}}})
                .find("requesting uid, groups or user-extra without impersonating a user"),
            std::string::npos);
  EXPECT_NE(check({.impersonate = {.uid = "1"}}).find("without impersonating a user"),
            std::string::npos);
  EXPECT_EQ(check({.impersonate = {.user = "u", .groups = {"g"}}}), "");
  EXPECT_NE(check({.impersonate = {.user = "u", .groups = {"g\r\nX-Evil: 1"}}})
                .find("holds a line break, which no HTTP header can carry"),
            std::string::npos);
  std::string plain = check({.server = "http://k:8080", .username = "u", .password = "p"});
  EXPECT_NE(plain.find("basic auth (username u) is not sent to http://k:8080: over plain http the "
                       "password crosses the network"),
            std::string::npos)
      << plain;
  EXPECT_EQ(check({.username = "u", .password = "p"}), "");

  // The same rules for a kubeconfig user and flags merged: --as-group without any as.
  Result<ConnectionConfig> conn = Parse({.as_groups = {"dev"}});
  ASSERT_TRUE(conn.ok());
  EXPECT_NE(CheckCredentials(*conn).message().find("without impersonating a user"),
            std::string::npos);
  // --token over a kubeconfig user with basic auth: two methods, refused.
  conn = Parse({.user = "carol", .token = "t"});
  ASSERT_TRUE(conn.ok());
  EXPECT_NE(CheckCredentials(*conn).message().find("more than one authentication method"),
            std::string::npos);
}

std::string WithUser(const std::string& user) {
  return "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
         "clusters: [{name: k, cluster: {server: 'https://k:443'}}]\n"
         "users:\n- name: u\n  user:\n" +
         user;
}

TEST(ConnectionOverridesTest, AuthProvidersAsClientGoKeepsThem) {
  auto error = [](const std::string& user) {
    Result<ConnectionConfig> conn = ParseKubeconfig(WithUser(user), "", "kubeconfig k");
    EXPECT_FALSE(conn.ok()) << user;
    return conn.status().message();
  };
  std::string gcp = error("    auth-provider: {name: gcp}\n");
  EXPECT_NE(gcp.find("user u: The gcp auth plugin has been removed."), std::string::npos) << gcp;
  EXPECT_NE(gcp.find("Please use the \"gke-gcloud-auth-plugin\" kubectl/client-go credential "
                     "plugin instead."),
            std::string::npos)
      << gcp;
  std::string azure = error("    auth-provider: {name: azure}\n");
  EXPECT_NE(azure.find("The azure auth plugin has been removed. Please use the "
                       "https://github.com/Azure/kubelogin kubectl/client-go credential plugin "
                       "instead."),
            std::string::npos)
      << azure;
  EXPECT_NE(error("    auth-provider: {name: openstack}\n")
                .find("no Auth Provider found for name \"openstack\""),
            std::string::npos);
  EXPECT_NE(error("    auth-provider: {name: oidc, config: {client-id: k8s}}\n")
                .find("auth-provider oidc must provide idp-issuer-url"),
            std::string::npos);
  EXPECT_NE(error("    auth-provider: {name: oidc, config: {idp-issuer-url: 'https://idp'}}\n")
                .find("must provide client-id"),
            std::string::npos);
  EXPECT_NE(error("    auth-provider: {name: oidc}\n    exec: {command: x}\n")
                .find("authProvider cannot be provided in combination with an exec plugin"),
            std::string::npos);

  const std::string oidc =
      "    auth-provider:\n      name: oidc\n      config:\n"
      "        idp-issuer-url: https://idp.example\n        client-id: k8s\n"
      "        id-token: a.b.c\n        refresh-token: r\n";
  Result<ConnectionConfig> conn = ParseKubeconfig(WithUser(oidc), "", "kubeconfig k");
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  ASSERT_TRUE(conn->oidc.has_value());
  EXPECT_EQ(conn->oidc->id_token, "a.b.c");
  EXPECT_EQ(conn->oidc->issuer_url, "https://idp.example");
  EXPECT_EQ(conn->oidc->refresh_token, "r");
  // A token (here the flag's) is sent instead, as kubectl's oidc round tripper leaves it.
  conn = ParseKubeconfig(WithUser(oidc), "", "kubeconfig k", {.token = "t"});
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_FALSE(conn->oidc.has_value());
  EXPECT_EQ(conn->token, "t");
  // So is basic auth, over an exec plugin.
  conn = ParseKubeconfig(WithUser("    username: u\n    password: p\n"
                                  "    exec: {apiVersion: client.authentication.k8s.io/v1, "
                                  "command: x, interactiveMode: Never}\n"),
                         "", "kubeconfig k");
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_FALSE(conn->exec.has_value());
  EXPECT_EQ(conn->username, "u");
}

}  // namespace
}  // namespace tessera::kube
