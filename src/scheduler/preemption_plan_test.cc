#include "scheduler/preemption_plan.h"

#include <gtest/gtest.h>

#include "scheduler/dialect.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using testing::Gpu;
using testing::MakePod;

// One GPU of `mib` holding `pods` (name, priority, MiB each); its usage is theirs.
struct Node {
  std::vector<GpuSlot> gpus;
  std::vector<PodOnNode> pods;
};

Node OneGpu(uint64_t mib, const std::vector<std::tuple<std::string, int, uint64_t>>& pods,
            int slots = 0) {
  Node n;
  n.gpus.push_back({Gpu("GPU-0", 0, "A10", mib, 0)});
  n.gpus[0].info.slots = slots;
  for (const auto& [name, priority, used] : pods) {
    GpuCharge c{"GPU-0", used, 0, false, slots > 0 ? 1 : 0};
    n.pods.push_back({{"default", name, "uid-" + name}, priority, false, {c}});
    n.gpus[0].used_mib += used;
    n.gpus[0].used_slots += c.slots;
    n.gpus[0].pods += 1;
  }
  return n;
}

PodRequest Memory(uint64_t mib) {
  Result<PodRequest> r = ParsePod(MakePod("hi", {{"nvidia.com/gpumem", mib}}), DialectConfig{});
  EXPECT_TRUE(r.ok());
  return *r;
}

std::vector<std::string> Names(const PreemptionPlan& plan) {
  std::vector<std::string> out;
  for (const PodOnNode& v : plan.victims) out.push_back(v.pod.name);
  return out;
}

std::optional<PreemptionPlan> Plan(const Node& n, const PodRequest& r, int priority,
                                   const std::set<std::string>& required = {}) {
  return PlanOnNode(r, priority, "node-a", n.gpus, n.pods, required, Policy::kBinpack);
}

TEST(PreemptionPlan, EvictsOnlyWhatTheGpuNeeds) {
  Node n = OneGpu(24000, {{"a", 0, 6000}, {"b", 0, 6000}, {"c", 0, 6000}, {"d", 0, 6000}});
  std::optional<PreemptionPlan> plan = Plan(n, Memory(10000), 1000);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->victims.size(), 2u) << "two pods of 6000 free the 10000 MiB, not more";
  ASSERT_EQ(plan->allocation.containers.size(), 1u);
  EXPECT_EQ(plan->allocation.containers[0].devices[0].uuid, "GPU-0");
  EXPECT_EQ(plan->allocation.node, "node-a");
}

TEST(PreemptionPlan, TheFewestVictimsBeatTheReprieveOrder) {
  // The reprieve keeps the higher-priority pod "big" and must then evict the three small ones;
  // evicting "big" alone frees as much.
  Node n = OneGpu(24000, {{"big", 5, 12000}, {"s1", 1, 4000}, {"s2", 1, 4000}, {"s3", 1, 4000}});
  std::optional<PreemptionPlan> plan = Plan(n, Memory(12000), 10);
  ASSERT_TRUE(plan);
  EXPECT_EQ(Names(*plan), std::vector<std::string>{"big"});
  EXPECT_EQ(plan->highest_priority, 5);
  // Of two single victims that both work, the one of lower priority.
  n = OneGpu(24000, {{"high", 5, 12000}, {"low", 1, 12000}});
  plan = Plan(n, Memory(12000), 10);
  ASSERT_TRUE(plan);
  EXPECT_EQ(Names(*plan), std::vector<std::string>{"low"});
}

TEST(PreemptionPlan, NothingIsEvictedWhereEvictionWouldNotMakeItFit) {
  Node n = OneGpu(24000, {{"a", 0, 12000}, {"b", 0, 12000}});
  EXPECT_FALSE(Plan(n, Memory(30000), 1000)) << "more than the GPU holds, even empty";
  // Pods of the same or a higher priority are never victims.
  n = OneGpu(24000, {{"same", 1000, 12000}, {"higher", 2000, 12000}});
  EXPECT_FALSE(Plan(n, Memory(12000), 1000));
  // Only one of them is evictable, and that is not enough.
  n = OneGpu(24000, {{"low", 0, 6000}, {"same", 1000, 18000}});
  EXPECT_FALSE(Plan(n, Memory(12000), 1000));
}

TEST(PreemptionPlan, TerminatingPodsAreGoneAndNoVictims) {
  Node n = OneGpu(24000, {{"ending", 0, 12000}, {"a", 0, 12000}});
  n.pods[0].terminating = true;
  std::optional<PreemptionPlan> plan = Plan(n, Memory(12000), 1000);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->victims.empty()) << "it fits once the ending pod is gone";
}

TEST(PreemptionPlan, VgpuSlotsAreFreedToo) {
  // The GPU has memory to spare but all 3 slots taken.
  Node n = OneGpu(24000, {{"a", 0, 100}, {"b", 0, 100}, {"c", 5, 100}}, 3);
  Result<PodRequest> r =
      ParsePod(MakePod("hi", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 100}}), DialectConfig{});
  ASSERT_TRUE(r.ok());
  std::optional<PreemptionPlan> plan = Plan(n, *r, 10);
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->victims.size(), 1u) << "one slot is enough";
  EXPECT_EQ(plan->highest_priority, 0) << "of the lowest priority, not c";
}

TEST(PreemptionPlan, KubeSchedulersVictimsStayAndTheGpuAddsItsOwn) {
  Node n = OneGpu(24000, {{"a", 0, 8000}, {"b", 0, 8000}, {"c", 0, 8000}});
  // kube-scheduler evicts "a" for its own reasons; the GPU still needs one more.
  std::optional<PreemptionPlan> plan = Plan(n, Memory(16000), 1000, {"uid-a"});
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->victims.size(), 2u);
  EXPECT_EQ(plan->victims[0].pod.name, "a");
  // When its victims are enough, nothing is added.
  plan = Plan(n, Memory(8000), 1000, {"uid-c"});
  ASSERT_TRUE(plan);
  EXPECT_EQ(Names(*plan), std::vector<std::string>{"c"});
}

TEST(PreemptionPlan, BetterPlanPrefersFewerThenLowerPriorityThenName) {
  PreemptionPlan one{"b", {PodOnNode{}}, {}, 5, 5};
  PreemptionPlan two{"a", {PodOnNode{}, PodOnNode{}}, {}, 1, 2};
  EXPECT_TRUE(BetterPlan(one, two));
  PreemptionPlan low{"c", {PodOnNode{}}, {}, 1, 1};
  EXPECT_TRUE(BetterPlan(low, one));
  PreemptionPlan same{"a", {PodOnNode{}}, {}, 5, 5};
  EXPECT_TRUE(BetterPlan(same, one));
  EXPECT_FALSE(BetterPlan(one, same));
}

}  // namespace
}  // namespace tessera::scheduler
