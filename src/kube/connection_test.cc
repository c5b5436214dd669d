#include "kube/connection.h"

#include <gtest/gtest.h>

#include "kube/temp_dir_for_test.h"

namespace tessera::kube {
namespace {

std::string Kubeconfig(const std::string& server) {
  return "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
         "clusters:\n- name: k\n  cluster: {server: '" +
         server + "'}\n";
}

class ConnectionTest : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string sa_dir_ = dir_.path() + "/sa";
};

TEST_F(ConnectionTest, SettingWithNewlineIsContent) {
  Result<ConnectionConfig> conn = ResolveConnection(Kubeconfig("https://inline:1"), {}, sa_dir_);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://inline:1");
}

TEST_F(ConnectionTest, SettingWinsOverKubeconfigEnvAndHome) {
  std::string flag = dir_.Write("flag", Kubeconfig("https://flag:1"));
  std::string env = dir_.Write("env", Kubeconfig("https://env:1"));
  dir_.Write("home/.kube/config", Kubeconfig("https://home:1"));
  Environment vars = {{"KUBECONFIG", env}, {"HOME", dir_.path() + "/home"}};
  EXPECT_EQ(ResolveConnection(flag, vars, sa_dir_)->server, "https://flag:1");
  EXPECT_EQ(ResolveConnection("", vars, sa_dir_)->server, "https://env:1");
  vars.erase("KUBECONFIG");
  EXPECT_EQ(ResolveConnection("", vars, sa_dir_)->server, "https://home:1");
}

TEST_F(ConnectionTest, KubeconfigListTakesTheFirstExistingFile) {
  std::string second = dir_.Write("second", Kubeconfig("https://second:1"));
  Environment vars = {{"KUBECONFIG", dir_.path() + "/missing:" + second}};
  EXPECT_EQ(ResolveConnection("", vars, sa_dir_)->server, "https://second:1");
  vars["KUBECONFIG"] = dir_.path() + "/missing";
  EXPECT_EQ(ResolveConnection("", vars, sa_dir_).status().code(), StatusCode::kNotFound);
}

TEST_F(ConnectionTest, InClusterWhenNothingElse) {
  dir_.Write("sa/token", "tok\n");
  dir_.Write("sa/ca.crt", "CA");
  Environment vars = {{"HOME", dir_.path() + "/nohome"},
                      {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                      {"KUBERNETES_SERVICE_PORT", "443"}};
  Result<ConnectionConfig> conn = ResolveConnection("", vars, sa_dir_);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn->server, "https://10.96.0.1:443");
  EXPECT_EQ(conn->token_file, sa_dir_ + "/token");
  EXPECT_EQ(conn->ca_file, sa_dir_ + "/ca.crt");

  vars["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  EXPECT_EQ(ResolveConnection("", vars, sa_dir_)->server, "https://[fd00::1]:443");
}

TEST_F(ConnectionTest, NothingFoundNamesEveryPlace) {
  Result<ConnectionConfig> conn = ResolveConnection("", {{"HOME", dir_.path()}}, sa_dir_);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), StatusCode::kNotFound);
  EXPECT_NE(conn.status().message().find("--kubeconfig"), std::string::npos);
  EXPECT_NE(conn.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST_F(ConnectionTest, InClusterWithoutTokenIsNotFound) {
  Environment vars = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  Result<ConnectionConfig> conn = InClusterConnection(vars, sa_dir_);
  EXPECT_EQ(conn.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(InClusterConnection({}, sa_dir_).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tessera::kube
