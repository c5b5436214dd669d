#include "scheduler/engine.h"

#include <gtest/gtest.h>

#include <thread>

#include "scheduler/fake_binder.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using testing::FakeBinder;
using testing::MakePod;
using testing::MakeUniformNode;

const PodId kPod{"default", "p", "uid-p"};

class EngineTest : public ::testing::Test {
 protected:
  EngineTest()
      : engine_(state_, binder_, {.watch_wait = std::chrono::milliseconds(20)}, &metrics_) {
    for (auto& [name, count, model, mib] :
         std::vector<std::tuple<std::string, int, std::string, uint64_t>>{
             {"small", 1, "SimGPU-3090", 24268}, {"big", 4, "A100", 40960}}) {
      EXPECT_TRUE(state_.OnNode(EventType::kAdded, MakeUniformNode(name, count, model, mib)).ok());
    }
  }

  PodRequest Request(const nlohmann::json& pod) {
    Result<PodRequest> r = ParsePod(pod, DialectConfig{});
    EXPECT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());  // the pod watch shows it
    return r.ok() ? *r : PodRequest{};
  }

  ClusterState state_{DialectConfig{}};
  FakeBinder binder_;
  Metrics metrics_;
  Engine engine_;
  const std::vector<std::string> names_ = {"small", "big", "ghost"};
};

TEST_F(EngineTest, FilterSortsNodesIntoFitsFailedAndUnresolvable) {
  FilterResult f = engine_.Filter(kPod, Request(MakePod("p", {{"nvidia.com/gpu", 2}})), names_);
  EXPECT_EQ(f.fits, std::vector<std::string>{"big"});
  EXPECT_TRUE(f.failed.empty());
  ASSERT_EQ(f.unresolvable.size(), 2u);
  EXPECT_EQ(f.unresolvable[0].first, "small");
  EXPECT_NE(f.unresolvable[0].second.find("needs 2 distinct GPUs"), std::string::npos);
  EXPECT_EQ(f.unresolvable[1].first, "ghost");

  // Fill "small": then a request that fits it empty fails there, resolvably.
  PodRequest big = Request(MakePod("a", {{"tencent.com/vcuda-memory", 90}}));
  ASSERT_TRUE(engine_.Bind({"default", "a", "uid-a"}, "small").ok());
  f = engine_.Filter(kPod, Request(MakePod("b", {{"tencent.com/vcuda-memory", 10}})), names_);
  EXPECT_EQ(f.fits, std::vector<std::string>{"big"});
  ASSERT_EQ(f.failed.size(), 1u);
  EXPECT_EQ(f.failed[0].first, "small");
  EXPECT_NE(f.failed[0].second.find("need 2560 MiB on 1 GPU, largest free 1228 MiB"),
            std::string::npos)
      << f.failed[0].second;
  // A pod without GPU request fits everywhere.
  EXPECT_EQ(engine_.Filter(kPod, PodRequest{}, names_).fits, names_);
}

// While a node's agent does not serve its devices (starting, stopping, kubelet restarting),
// kubelet would fail a pod that needs them: the node gets none, for now.
TEST_F(EngineTest, NodeWhoseAgentDoesNotServeGetsNoPodForNow) {
  nlohmann::json node = MakeUniformNode("small", 1, "SimGPU-3090", 24268);
  std::vector<GpuInfo> gpus = {testing::Gpu("small-gpu0", 0, "SimGPU-3090", 24268, 0)};
  node["metadata"]["annotations"][kInventoryAnnotation] =
      InventoryToJson({/*serving=*/false, gpus});
  ASSERT_TRUE(state_.OnNode(EventType::kModified, node).ok());
  PodRequest r = Request(MakePod("p", {{"nvidia.com/gpumem", 1000}}));
  FilterResult f = engine_.Filter(kPod, r, std::vector<std::string>{"small"});
  EXPECT_TRUE(f.fits.empty());
  ASSERT_EQ(f.failed.size(), 1u) << "not for ever: it comes back";
  EXPECT_EQ(f.failed[0].second, kNotServing);
  Status bound = engine_.Bind(kPod, "small");
  EXPECT_EQ(bound.code(), StatusCode::kUnavailable) << bound.message();
  EXPECT_TRUE(state_.Snapshot().nodes.at("small").gpus[0].used_mib == 0);
  // Serving again.
  ASSERT_TRUE(
      state_.OnNode(EventType::kModified, MakeUniformNode("small", 1, "SimGPU-3090", 24268)).ok());
  EXPECT_EQ(engine_.Filter(kPod, r, std::vector<std::string>{"small"}).fits,
            std::vector<std::string>{"small"});
  EXPECT_TRUE(engine_.Bind(kPod, "small").ok());
}

// Issue 33: a node whose agent scales its GPUs' memory by 2 (memoryScaling in its inventory):
// two pods of 20 GiB are bound to its one 24 GiB GPU, a third is refused naming the virtual and
// the physical memory, and /metrics shows both (/inspect:
// SchedulerHttp.InspectGivesPhysicalAndVirtualMemory).
TEST_F(EngineTest, ScaledMemoryTakesTwoTwentyGibPodsOnOneTwentyFourGibGpu) {
  std::vector<GpuInfo> gpus = {testing::Gpu("scaled-gpu0", 0, "SimGPU-24G", 24576, 0)};
  gpus[0].memory_scaling = 2;
  nlohmann::json node = MakeUniformNode("scaled", 1, "SimGPU-24G", 24576);
  node["metadata"]["annotations"][kInventoryAnnotation] = InventoryToJson({true, gpus});
  ASSERT_TRUE(state_.OnNode(EventType::kAdded, node).ok());
  const std::vector<std::string> scaled = {"scaled"};
  for (const char* name : {"a", "b"}) {
    PodId id{"default", name, std::string("uid-") + name};
    FilterResult f =
        engine_.Filter(id, Request(MakePod(name, {{"nvidia.com/gpumem", 20480}})), scaled);
    ASSERT_EQ(f.fits, scaled) << name;
    ASSERT_TRUE(engine_.Bind(id, "scaled").ok()) << name;
  }
  FilterResult f =
      engine_.Filter(kPod, Request(MakePod("p", {{"nvidia.com/gpumem", 20480}})), scaled);
  EXPECT_TRUE(f.fits.empty());
  ASSERT_EQ(f.failed.size(), 1u);
  EXPECT_EQ(f.failed[0].second,
            "insufficient GPU memory: need 20480 MiB on 1 GPU, largest free 8192 MiB (GPU 0, "
            "SimGPU-24G, virtual memory 49152 MiB = 24576 MiB x 2)");

  const StateSnapshot snapshot = state_.Snapshot();
  const GpuSlot& slot = snapshot.nodes.at("scaled").gpus.at(0);
  EXPECT_EQ(slot.info.memory_mib, 24576u);
  EXPECT_EQ(slot.info.virtual_memory_mib(), 49152u);
  EXPECT_EQ(slot.used_mib, 40960u);
  const std::string metrics = metrics_.Render(state_.Snapshot());
  const std::string labels =
      "{node=\"scaled\",Hostname=\"scaled\",gpu=\"0\",UUID=\"scaled-gpu0\",modelName=\"SimGPU-"
      "24G\"} ";
  for (const std::string& line :
       {"tessera_gpu_memory_inventory_bytes" + labels + std::to_string(24576ull << 20),
        "tessera_gpu_memory_inventory_virtual_bytes" + labels + std::to_string(49152ull << 20),
        "tessera_gpu_memory_allocated_bytes" + labels + std::to_string(40960ull << 20)}) {
    EXPECT_NE(metrics.find(line + "\n"), std::string::npos) << line;
  }
}

TEST_F(EngineTest, PrioritizeByPolicy) {
  PodRequest req = Request(MakePod("p", {{"nvidia.com/gpumem", 20000}}));
  auto scores = engine_.Prioritize(kPod, req, names_);
  // binpack: the small node ends up fuller.
  EXPECT_EQ(scores,
            (std::vector<std::pair<std::string, int>>{{"small", 8}, {"big", 1}, {"ghost", 0}}));
  req.node_policy = Policy::kSpread;
  scores = engine_.Prioritize(kPod, req, names_);
  EXPECT_EQ(scores,
            (std::vector<std::pair<std::string, int>>{{"small", 2}, {"big", 9}, {"ghost", 0}}));
}

TEST_F(EngineTest, BindPostsTheDecisionAndFailureReleasesIt) {
  Request(MakePod("p", {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 1000}}));
  ASSERT_TRUE(engine_.Bind({"default", "p", "uid-p"}, "big").ok());
  std::vector<BindingRequest> b = binder_.bindings();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].node, "big");
  Result<Allocation> a = ParseAllocation(b[0].annotations.at(kAllocationAnnotation));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->node, "big");
  ASSERT_EQ(a->containers.at(0).devices.size(), 2u);
  nlohmann::json binding = BindingObject(b[0]);
  EXPECT_EQ(binding["target"]["name"], "big");
  EXPECT_EQ(binding["metadata"]["uid"], "uid-p");

  Request(MakePod("q", {{"nvidia.com/gpumem", 30000}}));
  binder_.FailWith(Conflict("pod q was modified"));
  Status s = engine_.Bind({"default", "q", "uid-q"}, "big");
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  uint64_t used = 0;
  const StateSnapshot after = state_.Snapshot();  // kept alive while iterating its GPUs
  for (const GpuSlot& g : after.nodes.at("big").gpus) used += g.used_mib;
  EXPECT_EQ(used, 2000u) << "the failed bind's reservation is released";
  EXPECT_EQ(metrics_.Decisions(Outcome::kBindFailed), 1u);
  EXPECT_EQ(metrics_.Decisions(Outcome::kBound), 1u);

  binder_.FailWith(Status::Ok());
  EXPECT_EQ(engine_.Bind({"default", "nobody", ""}, "big").code(), StatusCode::kNotFound);
  Request(MakePod("huge", {{"nvidia.com/gpumem", 50000}}));
  Status no_fit = engine_.Bind({"default", "huge", "uid-huge"}, "big");
  EXPECT_EQ(no_fit.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(no_fit.message().find("insufficient GPU memory"), std::string::npos);
}

TEST_F(EngineTest, PodWithoutGpuIsBoundWithoutAnnotation) {
  Request(MakePod("cpu", {{"cpu", "1"}}));
  ASSERT_TRUE(engine_.Bind({"default", "cpu", "uid-cpu"}, "small").ok());
  ASSERT_EQ(binder_.bindings().size(), 1u);
  EXPECT_TRUE(binder_.bindings()[0].annotations.empty());
  EXPECT_TRUE(state_.Snapshot().pods.empty());
}

TEST_F(EngineTest, ConcurrentBindsToOneNodeNeverOverAllocate) {
  // 64 pods of 3000 MiB race for "big" (4 x 40960 MiB = 13 per GPU, 52 in all).
  constexpr int kPods = 64;
  for (int i = 0; i < kPods; ++i) {
    Request(MakePod("p" + std::to_string(i), {{"nvidia.com/gpumem", 3000}}));
  }
  std::vector<std::thread> threads;
  std::atomic<int> bound{0};
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back([&, i] {
      std::string name = "p" + std::to_string(i);
      if (engine_.Bind({"default", name, "uid-" + name}, "big").ok()) bound.fetch_add(1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bound.load(), 52);
  const StateSnapshot after = state_.Snapshot();  // kept alive while iterating its GPUs
  for (const GpuSlot& g : after.nodes.at("big").gpus) {
    EXPECT_LE(g.used_mib, g.info.memory_mib);
    EXPECT_EQ(g.pods, 13);
  }
}

}  // namespace
}  // namespace tessera::scheduler
