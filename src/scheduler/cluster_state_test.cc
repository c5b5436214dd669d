#include "scheduler/cluster_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using testing::BoundPod;
using testing::Gpu;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeUniformNode;

Allocation OneDevice(const std::string& node, const std::string& uuid, uint64_t mib, int cores,
                     bool exclusive = false) {
  return {node, {{"main", false, ComputeMode::kHard, {{uuid, mib, cores, 0, exclusive}}}}};
}

const GpuSlot& SlotOf(const StateSnapshot& s, const std::string& node, size_t i) {
  return s.nodes.at(node).gpus.at(i);
}

TEST(ClusterState, InventoryAndUsageFromAnnotations) {
  ClusterState state{DialectConfig{}};
  ASSERT_TRUE(state.OnNode(EventType::kAdded, MakeUniformNode("n1", 2, "T4", 15360)).ok());
  nlohmann::json pod = BoundPod(MakePod("p1", {{"nvidia.com/gpumem", 4096}}), "n1",
                                OneDevice("n1", "n1-gpu1", 4096, 30));
  ASSERT_TRUE(state.OnPod(EventType::kAdded, pod).ok());
  StateSnapshot s = state.Snapshot();
  EXPECT_EQ(SlotOf(s, "n1", 1).used_mib, 4096u);
  EXPECT_EQ(SlotOf(s, "n1", 1).used_cores, 30);
  EXPECT_EQ(SlotOf(s, "n1", 1).pods, 1);
  EXPECT_EQ(SlotOf(s, "n1", 0).used_mib, 0u);
  // Replaying the same event changes nothing.
  ASSERT_TRUE(state.OnPod(EventType::kModified, pod).ok());
  EXPECT_EQ(state.Snapshot(), s);
  EXPECT_EQ(state.MaxGpusPerNode(), 2);
  EXPECT_EQ(state.NodeCount(), 1u);
}

TEST(ClusterState, VgpuSlotsAreChargedAlsoForDecisionsWithoutTheSlotField) {
  ClusterState state{DialectConfig{}};
  ASSERT_TRUE(state.OnNode(EventType::kAdded, MakeUniformNode("n1", 1, "T4", 15360)).ok());
  // A decision written before the "slot" field: the container names nvidia.com/gpu, as kubelet
  // counts it, so it holds a slot.
  nlohmann::json old = BoundPod(MakePod("old", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 100}}),
                                "n1", OneDevice("n1", "n1-gpu0", 100, 0));
  ASSERT_TRUE(state.OnPod(EventType::kAdded, old).ok());
  // A gpushare pod holds none.
  ASSERT_TRUE(state
                  .OnPod(EventType::kAdded, BoundPod(MakePod("share", {{"aliyun.com/gpu-mem", 1}}),
                                                     "n1", OneDevice("n1", "n1-gpu0", 1024, 0)))
                  .ok());
  // A decision with the field.
  Allocation marked = OneDevice("n1", "n1-gpu0", 100, 0);
  marked.containers[0].slot = true;
  ASSERT_TRUE(state
                  .OnPod(EventType::kAdded, BoundPod(MakePod("new", {{"nvidia.com/gpu", 1},
                                                                     {"nvidia.com/gpumem", 100}}),
                                                     "n1", marked))
                  .ok());
  EXPECT_EQ(SlotOf(state.Snapshot(), "n1", 0).used_slots, 2);
  EXPECT_EQ(SlotOf(state.Snapshot(), "n1", 0).pods, 3);
  ASSERT_TRUE(state.OnPod(EventType::kDeleted, old).ok());
  EXPECT_EQ(SlotOf(state.Snapshot(), "n1", 0).used_slots, 1);
}

TEST(ClusterState, FinishedDeletedAndFailedPodsFreeTheirGpus) {
  struct Case {
    const char* name;
    std::function<void(ClusterState&, nlohmann::json)> end;
  } cases[] = {
      {"deleted", [](ClusterState& s, nlohmann::json p) { (void)s.OnPod(EventType::kDeleted, p); }},
      {"succeeded",
       [](ClusterState& s, nlohmann::json p) {
         p["status"]["phase"] = "Succeeded";
         (void)s.OnPod(EventType::kModified, p);
       }},
      {"failed",
       [](ClusterState& s, nlohmann::json p) {
         p["status"]["phase"] = "Failed";
         (void)s.OnPod(EventType::kModified, p);
       }},
      {"marked failed by the node agent",
       [](ClusterState& s, nlohmann::json p) {
         p["metadata"]["annotations"][kAllocationFailedAnnotation] = "GPU-x lost";
         (void)s.OnPod(EventType::kModified, p);
       }},
  };
  for (const Case& c : cases) {
    ClusterState state{DialectConfig{}};
    ASSERT_TRUE(state.OnNode(EventType::kAdded, MakeUniformNode("n1", 1, "T4", 15360)).ok());
    nlohmann::json pod = BoundPod(MakePod("p1", {{"nvidia.com/gpumem", 1000}}), "n1",
                                  OneDevice("n1", "n1-gpu0", 1000, 0));
    ASSERT_TRUE(state.OnPod(EventType::kAdded, pod).ok());
    ASSERT_EQ(SlotOf(state.Snapshot(), "n1", 0).used_mib, 1000u);
    c.end(state, pod);
    StateSnapshot s = state.Snapshot();
    EXPECT_EQ(SlotOf(s, "n1", 0).used_mib, 0u) << c.name;
    EXPECT_EQ(SlotOf(s, "n1", 0).pods, 0) << c.name;
    EXPECT_TRUE(s.pods.empty()) << c.name;
  }
}

TEST(ClusterState, RebuildInAnyOrderGivesTheSameState) {
  std::vector<std::pair<bool, nlohmann::json>> events;  // (is node, object)
  events.push_back({true, MakeUniformNode("n1", 4, "A100", 40000)});
  events.push_back(
      {true, MakeNode("n2", {Gpu("GPU-x", 0, "T4", 15360), Gpu("GPU-y", 1, "T4", 15360)})});
  for (int i = 0; i < 20; ++i) {
    std::string name = "p" + std::to_string(i);
    bool on_n1 = i % 2 == 0;
    std::string node = on_n1 ? "n1" : "n2";
    std::string uuid = on_n1 ? "n1-gpu" + std::to_string(i % 4) : (i % 4 == 1 ? "GPU-x" : "GPU-y");
    events.push_back({false, BoundPod(MakePod(name, {{"nvidia.com/gpumem", 100}}), node,
                                      OneDevice(node, uuid, 100 + i, i % 3 * 10))});
  }
  events.push_back({false, MakePod("pending", {{"nvidia.com/gpu", 1}})});
  auto build = [&](std::vector<std::pair<bool, nlohmann::json>> order) {
    auto state = std::make_unique<ClusterState>(DialectConfig{});
    for (auto& [is_node, object] : order) {
      Status s = is_node ? state->OnNode(EventType::kAdded, object)
                         : state->OnPod(EventType::kAdded, object);
      EXPECT_TRUE(s.ok()) << s.message();
    }
    return state->Snapshot();
  };
  StateSnapshot first = build(events);
  EXPECT_EQ(first.pods.size(), 21u);
  EXPECT_TRUE(first.pods.at("default/pending").pending.has_value());
  std::mt19937 rng(7);
  for (int round = 0; round < 5; ++round) {
    auto shuffled = events;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    EXPECT_EQ(build(shuffled), first) << "round " << round;
  }
}

TEST(ClusterState, InventoryChangesKeepUsageByUuid) {
  ClusterState state{DialectConfig{}};
  std::vector<GpuInfo> gpus = {Gpu("GPU-a", 0, "T4", 15360), Gpu("GPU-b", 1, "T4", 15360)};
  ASSERT_TRUE(state.OnNode(EventType::kAdded, MakeNode("n", gpus)).ok());
  ASSERT_TRUE(state
                  .OnPod(EventType::kAdded, BoundPod(MakePod("p", {{"nvidia.com/gpumem", 10}}), "n",
                                                     OneDevice("n", "GPU-b", 700, 0)))
                  .ok());
  // GPU-b disappears (unplugged): its usage waits as an orphan, and comes back with it.
  ASSERT_TRUE(state.OnNode(EventType::kModified, MakeNode("n", {gpus[0]})).ok());
  StateSnapshot s = state.Snapshot();
  EXPECT_EQ(s.nodes.at("n").gpus.size(), 1u);
  EXPECT_EQ(s.nodes.at("n").orphans.at("GPU-b").used_mib, 700u);
  std::swap(gpus[0], gpus[1]);
  ASSERT_TRUE(state.OnNode(EventType::kModified, MakeNode("n", gpus)).ok());
  s = state.Snapshot();
  EXPECT_TRUE(s.nodes.at("n").orphans.empty());
  EXPECT_EQ(SlotOf(s, "n", 0).info.uuid, "GPU-b");
  EXPECT_EQ(SlotOf(s, "n", 0).used_mib, 700u);
  // A broken annotation makes the node unusable but keeps the usage for when it is fixed.
  nlohmann::json broken = MakeNode("n", gpus);
  broken["metadata"]["annotations"][kInventoryAnnotation] = "{";
  Status st = state.OnNode(EventType::kModified, broken);
  EXPECT_FALSE(st.ok());
  s = state.Snapshot();
  EXPECT_FALSE(s.nodes.at("n").present);
  EXPECT_EQ(s.nodes.at("n").orphans.at("GPU-b").used_mib, 700u);
  ASSERT_TRUE(state.OnNode(EventType::kModified, MakeNode("n", gpus)).ok());
  EXPECT_EQ(SlotOf(state.Snapshot(), "n", 0).used_mib, 700u);
}

TEST(ClusterState, ReservationLifecycle) {
  ClusterState state{DialectConfig{}};
  ASSERT_TRUE(state.OnNode(EventType::kAdded, MakeUniformNode("n1", 1, "T4", 15360)).ok());
  PodId id{"default", "p", "uid-p"};
  Allocation decision = OneDevice("", "n1-gpu0", 2000, 10);
  auto decide = [&](std::span<const GpuSlot>) -> Result<Allocation> { return decision; };
  Result<Allocation> r = state.Reserve(id, "n1", decide);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->node, "n1");
  EXPECT_EQ(SlotOf(state.Snapshot(), "n1", 0).used_mib, 2000u);
  EXPECT_EQ(state.Reserve(id, "n1", decide).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(state.Reserve({"default", "q", ""}, "nope", decide).status().code(),
            StatusCode::kNotFound);

  // An update of the still-unbound pod does not drop the reservation in flight.
  ASSERT_TRUE(state.OnPod(EventType::kModified, MakePod("p", {{"nvidia.com/gpumem", 2000}})).ok());
  EXPECT_EQ(SlotOf(state.Snapshot(), "n1", 0).used_mib, 2000u);
  // The bound pod confirms it: same charge, not reserved any more.
  decision.node = "n1";
  ASSERT_TRUE(state
                  .OnPod(EventType::kModified,
                         BoundPod(MakePod("p", {{"nvidia.com/gpumem", 2000}}), "n1", decision))
                  .ok());
  StateSnapshot s = state.Snapshot();
  EXPECT_EQ(SlotOf(s, "n1", 0).used_mib, 2000u);
  EXPECT_FALSE(s.pods.at("default/p").reserved);
  state.CancelReservation(id);  // confirmed: nothing to cancel
  EXPECT_EQ(SlotOf(state.Snapshot(), "n1", 0).used_mib, 2000u);

  PodId other{"default", "o", "uid-o"};
  ASSERT_TRUE(state.Reserve(other, "n1", decide).ok());
  EXPECT_EQ(SlotOf(state.Snapshot(), "n1", 0).used_mib, 4000u);
  state.CancelReservation(other);
  EXPECT_EQ(SlotOf(state.Snapshot(), "n1", 0).used_mib, 2000u);
  EXPECT_EQ(state.Snapshot().pods.count("default/o"), 0u);
}

TEST(ClusterState, RecreatedPodWithSameNameReleasesTheOldOne) {
  ClusterState state{DialectConfig{}};
  ASSERT_TRUE(state.OnNode(EventType::kAdded, MakeUniformNode("n1", 1, "T4", 15360)).ok());
  ASSERT_TRUE(state
                  .OnPod(EventType::kAdded, BoundPod(MakePod("p", {{"nvidia.com/gpumem", 10}}),
                                                     "n1", OneDevice("n1", "n1-gpu0", 5000, 0)))
                  .ok());
  nlohmann::json again = MakePod("p", {{"nvidia.com/gpumem", 10}});
  again["metadata"]["uid"] = "uid-new";
  ASSERT_TRUE(state.OnPod(EventType::kAdded, again).ok());
  StateSnapshot s = state.Snapshot();
  EXPECT_EQ(SlotOf(s, "n1", 0).used_mib, 0u);
  EXPECT_EQ(s.pods.at("default/p").uid, "uid-new");
  EXPECT_TRUE(s.pods.at("default/p").pending.has_value());
}

TEST(ClusterState, BadObjectsAreReportedAndSkipped) {
  ClusterState state{DialectConfig{}};
  EXPECT_FALSE(state.OnNode(EventType::kAdded, nlohmann::json::object()).ok());
  EXPECT_FALSE(state.OnPod(EventType::kAdded, {{"metadata", 3}}).ok());
  nlohmann::json pod = MakePod("p", {{"nvidia.com/gpumem", 10}});
  pod["spec"]["nodeName"] = "n1";
  pod["metadata"]["annotations"][kAllocationAnnotation] = "not json";
  EXPECT_FALSE(state.OnPod(EventType::kAdded, pod).ok());
  EXPECT_TRUE(state.Snapshot().pods.empty());
  // A node without the annotation is simply not a GPU node.
  nlohmann::json plain = {{"metadata", {{"name", "cpu-node"}}}};
  EXPECT_TRUE(state.OnNode(EventType::kAdded, plain).ok());
  EXPECT_EQ(state.NodeCount(), 0u);
}

}  // namespace
}  // namespace tessera::scheduler
