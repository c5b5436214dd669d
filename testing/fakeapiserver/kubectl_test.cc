// The real kubectl against the fake API server: get (table, json, yaml, watch), create -f,
// annotate, label, patch --type merge, delete; results checked through plain HTTP.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fakeapiserver/kubectl_run.h"
#include "fakeapiserver/server_fixture.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using Ran = KubectlRun;

class KubectlTest : public FakeApiServerTest {
 protected:
  void SetUp() override {
    if (std::system("command -v kubectl > /dev/null 2>&1") != 0) {
      GTEST_SKIP() << "no kubectl on PATH: install one (scripts/setup installs kubernetes-client)";
    }
    FakeApiServerTest::SetUp();
    dir_ = fs::temp_directory_path() /
           ("fakeapi-kubectl-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "kubeconfig")
        << "apiVersion: v1\nkind: Config\n"
        << "clusters: [{name: fake, cluster: {server: \"" << server_->url() << "\"}}]\n"
        << "users: [{name: u, user: {}}]\n"
        << "contexts: [{name: c, context: {cluster: fake, user: u, namespace: default}}]\n"
        << "current-context: c\n";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string Kubectl(const std::string& args) {
    return KubectlCommand((dir_ / "kubeconfig").string(), (dir_ / "cache").string(), args);
  }

  Ran Run(const std::string& args) {
    return RunKubectl((dir_ / "kubeconfig").string(), (dir_ / "cache").string(), args);
  }

  fs::path dir_;
};

TEST_F(KubectlTest, GetAsTableJsonAndYaml) {
  CreatePod("p1", {{"app", "web"}});
  ASSERT_EQ(client_->Post("/api/v1/nodes", json{{"metadata", {{"name", "n1"}}}}).status, 201);

  Ran table = Run("get pods");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("NAME"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("STATUS"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("p1"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("Pending"), std::string::npos) << table.output;

  Ran nodes = Run("get nodes");
  ASSERT_EQ(nodes.exit_code, 0) << nodes.output;
  EXPECT_NE(nodes.output.find("n1"), std::string::npos) << nodes.output;

  Ran as_json = Run("get pod p1 -o json");
  ASSERT_EQ(as_json.exit_code, 0) << as_json.output;
  json parsed = json::parse(as_json.output, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << as_json.output;
  EXPECT_EQ(parsed["metadata"]["labels"]["app"], "web");

  Ran as_yaml = Run("get pods -o yaml");
  ASSERT_EQ(as_yaml.exit_code, 0) << as_yaml.output;
  EXPECT_NE(as_yaml.output.find("name: p1"), std::string::npos) << as_yaml.output;

  Ran selected = Run("get pods -l app=db");
  ASSERT_EQ(selected.exit_code, 0) << selected.output;
  EXPECT_EQ(selected.output.find("p1"), std::string::npos) << selected.output;
}

TEST_F(KubectlTest, CreateAnnotateLabelPatchDelete) {
  std::ofstream(dir_ / "pod.yaml") << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: k1\n"
                                   << "spec:\n  containers: [{name: c, image: busybox}]\n";
  Ran create = Run("create -f '" + (dir_ / "pod.yaml").string() + "'");
  ASSERT_EQ(create.exit_code, 0) << create.output;
  const std::string path = "/api/v1/namespaces/default/pods/k1";
  ASSERT_EQ(client_->Get(path).status, 200);

  Ran annotate = Run("annotate pod k1 tessera.io/gpu=GPU-1");
  ASSERT_EQ(annotate.exit_code, 0) << annotate.output;
  Ran label = Run("label pod k1 tier=web");
  ASSERT_EQ(label.exit_code, 0) << label.output;
  Ran patch = Run("patch pod k1 --type merge -p '{\"metadata\":{\"annotations\":{\"x\":\"1\"}}}'");
  ASSERT_EQ(patch.exit_code, 0) << patch.output;
  json pod = client_->Get(path).body;
  EXPECT_EQ(pod["metadata"]["annotations"]["tessera.io/gpu"], "GPU-1");
  EXPECT_EQ(pod["metadata"]["annotations"]["x"], "1");
  EXPECT_EQ(pod["metadata"]["labels"]["tier"], "web");

  // And the other way round: a change made over HTTP is what kubectl reads.
  client_->Patch(path, "application/merge-patch+json",
                 R"({"metadata":{"labels":{"from":"http"}}})");
  Ran read = Run("get pod k1 -o jsonpath={.metadata.labels.from}");
  ASSERT_EQ(read.exit_code, 0) << read.output;
  EXPECT_EQ(read.output, "http");

  Ran del = Run("delete pod k1");
  ASSERT_EQ(del.exit_code, 0) << del.output;
  EXPECT_EQ(client_->Get(path).status, 404);
}

TEST_F(KubectlTest, GetWatchPrintsNewPods) {
  CreatePod("before");
  FILE* p = popen(Kubectl("get pods --watch").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  bool created = false;
  char line[1024];
  // kubectl prints the existing pod first; then a pod created now must appear. The server ends
  // the watch once it has, which ends kubectl; `timeout 60` bounds it in any case.
  while (fgets(line, sizeof line, p) != nullptr) {
    output += line;
    if (!created && output.find("before") != std::string::npos) {
      CreatePod("during");
      created = true;
    }
    if (output.find("during") != std::string::npos) server_->CloseWatches();
  }
  pclose(p);
  EXPECT_TRUE(created) << output;
  EXPECT_NE(output.find("during"), std::string::npos) << output;
}

}  // namespace
}  // namespace tessera::testing
