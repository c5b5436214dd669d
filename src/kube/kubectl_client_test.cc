// The real kubectl and this client library on one fake API server, through one kubeconfig: what
// kubectl does (create -f, annotate, label, patch --type merge, delete) is what the client and an
// informer see, and what the client does (create, annotation patch, Binding, Event, Lease) is what
// kubectl shows. Skipped, with a message, when no kubectl is on PATH.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "fakeapiserver/kubectl_run.h"
#include "kube/connection.h"
#include "kube/fake_server_for_test.h"
#include "kube/informer.h"
#include "kube/leader_elector.h"
#include "kube/temp_dir_for_test.h"

namespace tessera::kube {
namespace {

using std::chrono::milliseconds;

using Ran = tessera::testing::KubectlRun;

class KubectlClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v kubectl > /dev/null 2>&1") != 0) {
      GTEST_SKIP() << "no kubectl on PATH: install one (scripts/setup installs kubernetes-client)";
    }
    server_ = StartFakeServer();
    ASSERT_NE(server_, nullptr);
    kubeconfig_ = dir_.Write("kubeconfig",
                             "apiVersion: v1\nkind: Config\n"
                             "clusters: [{name: fake, cluster: {server: \"" +
                                 server_->url() +
                                 "\"}}]\n"
                                 "users: [{name: u, user: {token: not-checked}}]\n"
                                 "contexts: [{name: c, context: {cluster: fake, user: u, "
                                 "namespace: default}}]\n"
                                 "current-context: c\n");
    // The client reads the same kubeconfig as kubectl.
    Result<ConnectionConfig> connection = ResolveConnection(kubeconfig_, {});
    ASSERT_TRUE(connection.ok()) << connection.status().ToString();
    Result<std::unique_ptr<Client>> client = Client::Create(*connection, {.qps = 0});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  Ran Kubectl(const std::string& args) {
    return tessera::testing::RunKubectl(kubeconfig_, dir_.path() + "/cache", args);
  }
  // Runs kubectl and expects success; returns its output.
  std::string MustKubectl(const std::string& args) {
    Ran r = Kubectl(args);
    EXPECT_EQ(r.exit_code, 0) << "kubectl " << args << "\n" << r.output;
    return r.output;
  }

  TempDir dir_;
  std::string kubeconfig_;
  std::unique_ptr<testing::FakeApiServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(KubectlClientTest, WhatKubectlDoesTheClientAndAnInformerSee) {
  std::mutex mutex;
  std::vector<std::string> seen;  // "<event> <name>" in order
  auto record = [&](const char* what, const Json& pod) {
    std::lock_guard lock(mutex);
    seen.push_back(std::string(what) + " " + NameOf(pod));
  };
  Informer informer(*client_, kPods, {.name = "pods", .selectors = {.ns = "default"}},
                    {.on_add = [&](const Json& p) { record("add", p); },
                     .on_update = [&](const Json&, const Json& p) { record("update", p); },
                     .on_delete = [&](const Json& p) { record("delete", p); }});
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(10)));

  std::string manifest = dir_.Write("pod.yaml",
                                    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: k1\n"
                                    "spec:\n  containers: [{name: c, image: busybox}]\n");
  MustKubectl("create -f '" + manifest + "'");
  Result<Json> created = client_->Get(kPods, "default", "k1");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(StringAt(*created, "/spec/containers/0/image"), "busybox");

  MustKubectl("annotate pod k1 tessera.io/gpu-model=A100");
  MustKubectl("label pod k1 tier=gpu");
  MustKubectl("patch pod k1 --type merge -p '{\"metadata\":{\"annotations\":{\"x\":\"1\"}}}'");
  Result<Json> changed = client_->Get(kPods, "default", "k1");
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(Annotation(*changed, "tessera.io/gpu-model"), "A100");
  EXPECT_EQ(Annotation(*changed, "x"), "1");
  EXPECT_EQ(Labels(*changed).at("tier"), "gpu");
  Result<ObjectList> selected = client_->List(kPods, {.label_selector = "tier=gpu"});
  ASSERT_TRUE(selected.ok()) << selected.status().ToString();
  ASSERT_EQ(selected->items.size(), 1u);
  EXPECT_EQ(NameOf(selected->items[0]), "k1");
  // A kubectl change made after the client read the pod is a 409 for the client's stale version.
  std::string read_version = ResourceVersionOf(*changed);
  MustKubectl("annotate pod k1 y=2");
  EXPECT_EQ(
      client_->PatchAnnotations(kPods, "default", "k1", {{"z", "3"}}, read_version).status().code(),
      StatusCode::kConflict);

  MustKubectl("delete pod k1");
  EXPECT_EQ(client_->Get(kPods, "default", "k1").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard lock(mutex);
    return !seen.empty() && seen.back() == "delete k1";
  })) << "the informer never saw kubectl delete the pod";
  std::lock_guard lock(mutex);
  // create, then one update per annotate/label/patch/annotate, then delete.
  EXPECT_EQ(seen, (std::vector<std::string>{"add k1", "update k1", "update k1", "update k1",
                                            "update k1", "delete k1"}));
}

TEST_F(KubectlClientTest, WhatTheClientDoesKubectlShows) {
  Json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "gpu-node"}}}};
  ASSERT_TRUE(client_->Create(kNodes, "", node).ok());
  ASSERT_TRUE(client_->PatchAnnotations(kNodes, "", "gpu-node", {{"tessera.io/gpus", "[]"}}).ok());
  Result<Json> pod = client_->Create(kPods, "default", PodObject("default", "p1", {{"app", "x"}}));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  ASSERT_TRUE(client_->PatchLabels(kPods, "default", "p1", {{"tier", "gpu"}}).ok());
  Status bound = client_->Bind("default", "p1", UidOf(*pod), "gpu-node",
                               {{"tessera.io/allocation", R"({"version":1})"}});
  ASSERT_TRUE(bound.ok()) << bound.ToString();
  ASSERT_TRUE(client_->PatchStatus(kPods, "default", "p1", {{"phase", "Running"}}).ok());
  ASSERT_TRUE(
      client_->CreateEvent(*pod, "Normal", "Scheduled", "bound to gpu-node", "tessera").ok());

  EXPECT_NE(MustKubectl("get nodes").find("gpu-node"), std::string::npos);
  EXPECT_EQ(
      MustKubectl("get node gpu-node -o jsonpath='{.metadata.annotations.tessera\\.io/gpus}'"),
      "[]");
  std::string wide = MustKubectl("get pods -o wide");
  EXPECT_NE(wide.find("p1"), std::string::npos) << wide;
  EXPECT_NE(wide.find("Running"), std::string::npos) << wide;
  EXPECT_NE(wide.find("gpu-node"), std::string::npos) << wide;
  EXPECT_EQ(MustKubectl("get pod p1 -o jsonpath='{.metadata.annotations.tessera\\.io/allocation}'"),
            R"({"version":1})");
  EXPECT_EQ(MustKubectl("get pods -l tier=gpu -o jsonpath='{.items[*].metadata.name}'"), "p1");
  std::string events = MustKubectl("get events -o jsonpath='{.items[*].reason}'");
  EXPECT_EQ(events, "Scheduled");

  auto elector = LeaderElector::Create(*client_, {.lease_namespace = "kube-system",
                                                  .lease_name = "tessera-kubectl",
                                                  .identity = "replica-1",
                                                  .lease_duration = milliseconds(2000),
                                                  .renew_deadline = milliseconds(1000),
                                                  .retry_period = milliseconds(200)});
  ASSERT_TRUE(elector.ok()) << elector.status().ToString();
  (*elector)->Start();
  ASSERT_TRUE(WaitUntil([&] { return (*elector)->IsLeader(); }));
  EXPECT_EQ(MustKubectl("get leases -n kube-system tessera-kubectl "
                        "-o jsonpath='{.spec.holderIdentity}'"),
            "replica-1");
  (*elector)->Stop();
  EXPECT_EQ(MustKubectl("get leases -n kube-system tessera-kubectl "
                        "-o jsonpath='{.spec.holderIdentity}'"),
            "");

  ASSERT_TRUE(client_->Delete(kPods, "default", "p1").ok());
  Ran gone = Kubectl("get pod p1");
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_NE(gone.output.find("NotFound"), std::string::npos) << gone.output;
}

}  // namespace
}  // namespace tessera::kube
