// The protocol end to end between two parts: a decision the scheduler makes and writes, on a node
// whose inventory is what the node agent writes, is read by the node agent as the same grant for
// every container (memory, cores, mode, devices, init containers).
#include <gtest/gtest.h>

#include "annotations/allocation.h"
#include "node/allocation/grant.h"
#include "node/gpu/inventory.h"
#include "scheduler/engine.h"
#include "scheduler/fake_binder.h"
#include "scheduler/test_objects.h"

namespace tessera {
namespace {

using scheduler::testing::MakePod;
using scheduler::testing::TestContainer;

constexpr char kNode[] = "gpu-node";

nlohmann::json AgentNode() {
  std::vector<node::GpuInfo> gpus;
  for (int i = 0; i < 4; ++i) {
    gpus.push_back({.uuid = "GPU-" + std::to_string(i),
                    .index = i,
                    .model = "NVIDIA H200",
                    .memory_mib = 143771,
                    .sms = 132,
                    .pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0",
                    .numa = 0});
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", kNode},
            {"annotations",
             {{annotations::kGpus, node::GpusAnnotation(gpus, 1.0, 10, /*serving=*/true)}}}}}};
}

TEST(DecisionToGrant, TheNodeReadsTheSchedulersDecisionAsTheSameGrant) {
  scheduler::ClusterState state{scheduler::DialectConfig{}};
  scheduler::testing::FakeBinder binder;
  scheduler::Metrics metrics;
  scheduler::Engine engine(state, binder, {.watch_wait = std::chrono::milliseconds(20)}, &metrics);
  ASSERT_TRUE(state.OnNode(scheduler::EventType::kAdded, AgentNode()).ok());

  nlohmann::json pod = MakePod(
      "p",
      std::vector<TestContainer>{
          {"warmup", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 2000}}, /*init=*/true},
          {"main", {{"tencent.com/vcuda-core", 30}, {"tencent.com/vcuda-memory", 16}}},
          {"trainer",
           {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 1000}, {"nvidia.com/gpucores", 50}}},
          {"sidecar", {}}},
      {{"tencent.com/vcuda-core-limit", "80"}});
  Result<scheduler::PodRequest> request = scheduler::ParsePod(pod, scheduler::DialectConfig{});
  ASSERT_TRUE(request.ok()) << request.status().message();
  ASSERT_TRUE(state.OnPod(scheduler::EventType::kAdded, pod).ok());
  Status bound = engine.Bind({"default", "p", "uid-p"}, kNode);
  ASSERT_TRUE(bound.ok()) << bound.message();
  ASSERT_EQ(binder.bindings().size(), 1u);
  const std::string written = binder.bindings()[0].annotations.at(annotations::kAllocation);

  Result<annotations::Allocation> decision = annotations::ParseAllocation(written);
  ASSERT_TRUE(decision.ok()) << decision.status().message();
  // The decision holds what the test is about, so that the comparison below is not vacuous.
  ASSERT_EQ(decision->containers.size(), 3u) << written;
  ASSERT_NE(decision->Find("warmup"), nullptr);
  EXPECT_TRUE(decision->Find("warmup")->init);
  ASSERT_NE(decision->Find("main"), nullptr);
  EXPECT_EQ(decision->Find("main")->mode, annotations::ComputeMode::kElastic);
  EXPECT_EQ(decision->Find("main")->devices.at(0).cores_limit, 80);
  ASSERT_NE(decision->Find("trainer"), nullptr);
  EXPECT_EQ(decision->Find("trainer")->devices.size(), 2u);

  for (const annotations::ContainerAllocation& c : decision->containers) {
    Result<std::optional<node::Grant>> grant = node::GrantFromAllocation(written, c.name, kNode);
    ASSERT_TRUE(grant.ok()) << c.name << ": " << grant.status().message();
    ASSERT_TRUE(grant->has_value()) << c.name;
    const node::Grant& g = **grant;
    EXPECT_EQ(g.mode, annotations::ComputeModeName(c.mode)) << c.name;
    ASSERT_EQ(g.devices.size(), c.devices.size()) << c.name;
    for (size_t i = 0; i < c.devices.size(); ++i) {
      EXPECT_EQ(g.devices[i].uuid, c.devices[i].uuid) << c.name;
      EXPECT_EQ(g.devices[i].memory_mib, c.devices[i].memory_mib) << c.name;
      EXPECT_EQ(g.devices[i].cores, c.devices[i].cores) << c.name;
      EXPECT_EQ(g.devices[i].cores_limit, c.devices[i].cores_limit) << c.name;
    }
  }
  Result<std::optional<node::Grant>> none = node::GrantFromAllocation(written, "sidecar", kNode);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value()) << "a container without GPUs has no decision";
  EXPECT_FALSE(node::GrantFromAllocation(written, "main", "other-node").ok())
      << "a decision is for its node only";
}

}  // namespace
}  // namespace tessera
