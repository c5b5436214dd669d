// End-to-end: the scheduler app (informers, extender, Binding) against the fake API server
// (testing/fakeapiserver), driven over HTTP the way kube-scheduler drives an extender.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "fakeapiserver/fake_api_server.h"
#include "kube/resource.h"
#include "scheduler/extender_driver.h"
#include "scheduler/scheduler_app.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::Driver;
using testing::MakePod;
using testing::MakeUniformNode;
using testing::Resources;

class SchedulerE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = tessera::testing::FakeApiServer::Start({});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto client = kube::Client::Create({.server = server_->url()});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }
  void TearDown() override { app_.reset(); }

  void StartApp() {
    app_.reset();
    AppOptions options;
    options.server.listen = "127.0.0.1:0";
    app_ = std::make_unique<SchedulerApp>(*client_, options);
    ASSERT_TRUE(app_->Start().ok());
    ASSERT_TRUE(app_->WaitForSync(std::chrono::seconds(30)));
  }

  json Create(const kube::Resource& resource, json object) {
    object["metadata"].erase("uid");
    std::string ns = resource.namespaced ? "default" : "";
    Result<json> created = client_->Create(resource, ns, object);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : json();
  }
  json CreatePod(const json& pod) { return Create(kube::kPods, pod); }
  json GetPod(const std::string& name) {
    Result<json> pod = client_->Get(kube::kPods, "default", name);
    EXPECT_TRUE(pod.ok()) << pod.status().ToString();
    return pod.ok() ? *pod : json();
  }
  void DeletePod(const std::string& name) {
    Status s = client_->Delete(kube::kPods, "default", name);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Polls `done` every 10 ms for up to 30 s (the informers deliver asynchronously).
  template <typename F>
  bool WaitFor(F done) {
    for (int i = 0; i < 3000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }

  uint64_t UsedMib(const std::string& node) {
    StateSnapshot s = app_->state().Snapshot();
    uint64_t used = 0;
    for (const GpuSlot& g : s.nodes[node].gpus) used += g.used_mib;
    return used;
  }

  std::unique_ptr<tessera::testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<SchedulerApp> app_;
};

json MixedPod(int i, std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Resources r;
  switch (i % 3) {
    case 0:
      r = {{"nvidia.com/gpu", pick(1, 2)},
           {"nvidia.com/gpumem", pick(1, 6) * 1000},
           {"nvidia.com/gpucores", pick(0, 3) * 10}};
      break;
    case 1:
      r = {{"tencent.com/vcuda-core", pick(1, 5) * 10}, {"tencent.com/vcuda-memory", pick(4, 30)}};
      break;
    default:
      r = {{"aliyun.com/gpu-mem", pick(1, 6)}};
  }
  return MakePod("pod-" + std::to_string(i), r);
}

TEST_F(SchedulerE2E, BindsThroughTheApiServerFreesOnDeleteAndRestartRebuildsTheSameState) {
  std::vector<std::string> nodes = {"t4", "a100", "rtx-a", "rtx-b"};
  Create(kube::kNodes, MakeUniformNode("t4", 4, "Tesla T4", 15360));
  Create(kube::kNodes, MakeUniformNode("a100", 2, "A100-SXM4-40GB", 40960));
  Create(kube::kNodes, MakeUniformNode("rtx-a", 8, "SimGPU-3090", 24268));
  Create(kube::kNodes, MakeUniformNode("rtx-b", 8, "SimGPU-3090", 24268));
  StartApp();
  ASSERT_EQ(app_->state().NodeCount(), 4u);

  std::mt19937 rng(3);
  std::map<std::string, std::string> placed;
  for (int i = 0; i < 60; ++i) {
    json pod = CreatePod(MixedPod(i, rng));
    std::string node = Driver(app_->port()).Schedule(pod, nodes);
    ASSERT_EQ(node.find("bind failed"), std::string::npos) << node;
    if (!node.empty()) placed[pod["metadata"]["name"]] = node;
  }
  EXPECT_GT(placed.size(), 40u);
  // Every Binding reached the API server with its decision, and the watch confirmed it.
  std::map<std::string, uint64_t> per_gpu;
  for (auto& [name, node] : placed) {
    json pod = GetPod(name);
    EXPECT_EQ(pod["spec"]["nodeName"], node);
    Result<Allocation> a =
        ParseAllocation(pod["metadata"]["annotations"]["tessera.io/allocation"].get<std::string>());
    ASSERT_TRUE(a.ok()) << name;
    for (const GpuCharge& c : ChargesOf(*a)) per_gpu[c.uuid] += c.memory_mib;
  }
  for (auto& [uuid, mib] : per_gpu) {
    uint64_t total = uuid.rfind("t4", 0) == 0 ? 15360 : uuid.rfind("a100", 0) == 0 ? 40960 : 24268;
    EXPECT_LE(mib, total) << uuid;
  }
  ASSERT_TRUE(WaitFor([&] {
    for (auto& [key, p] : app_->state().Snapshot().pods) {
      if (p.reserved) return false;
    }
    return true;
  }));

  // Restart: the new process rebuilds exactly the same usage from the API server.
  StateSnapshot before = app_->state().Snapshot();
  StartApp();
  EXPECT_EQ(app_->state().Snapshot().nodes, before.nodes);

  // Deleted and Succeeded pods free their GPUs.
  std::string victim = placed.begin()->first;
  std::string victim_node = placed.begin()->second;
  uint64_t used = UsedMib(victim_node);
  DeletePod(victim);
  ASSERT_TRUE(WaitFor([&] { return UsedMib(victim_node) < used; }));
  std::string done = std::next(placed.begin())->first;
  std::string done_node = std::next(placed.begin())->second;
  used = UsedMib(done_node);
  ASSERT_TRUE(client_->PatchStatus(kube::kPods, "default", done, {{"phase", "Succeeded"}}).ok());
  ASSERT_TRUE(WaitFor([&] { return UsedMib(done_node) < used; }));

  // A Binding the API server refuses (the pod is gone) leaves no reservation behind.
  json ghost = CreatePod(MakePod("ghost", {{"aliyun.com/gpu-mem", 1}}));
  Driver d(app_->port());
  json f =
      d.Post("/filter", json{{"Pod", ghost}, {"NodeNames", {"t4"}}, {"Nodes", nullptr}}.dump());
  ASSERT_EQ(f["NodeNames"], json({"t4"}));
  DeletePod("ghost");
  used = UsedMib("t4");
  json b = d.Post("/bind", json{{"PodName", "ghost"},
                                {"PodNamespace", "default"},
                                {"PodUID", ghost["metadata"]["uid"]},
                                {"Node", "t4"}}
                               .dump());
  EXPECT_FALSE(b["Error"].get<std::string>().empty());
  EXPECT_EQ(UsedMib("t4"), used);
}

}  // namespace
}  // namespace tessera::scheduler
