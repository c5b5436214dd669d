// A user outside the webhook's reach (kube-system, tessera-system, or one who can edit the webhook
// configuration) could write Tessera's annotations by hand; each test is one such forgery against
// a scheduler with signing on. Before signatures, every one of them changed the accounting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/cluster_state.h"
#include "scheduler/engine.h"
#include "scheduler/fake_binder.h"
#include "scheduler/metrics.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::BoundPod;
using ::testing::HasSubstr;
using testing::MakePod;
using testing::MakeUniformNode;

constexpr char kKey[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
constexpr char kOtherKey[] = "/////////////////////////////////////////////////////w==";

annotations::Signing Keys(const char* key = kKey) {
  return annotations::Signing(annotations::KeyRing::Parse(key, "keys").value());
}

// Sets name=value on `object` as `signing` writes it (with the signature when it has keys).
void Write(json& object, const annotations::Signing& signing, const std::string& name,
           const std::string& value) {
  for (const auto& [k, v] : signing.Signed(name, object["metadata"].value("uid", ""), value)) {
    object["metadata"]["annotations"][k] = v;
  }
}

Allocation OneGpu(uint64_t mib) {
  return {"n", {{"main", false, ComputeMode::kHard, {{"n-gpu0", mib, 0, 0, false}}}}};
}

class ForgedAnnotations : public ::testing::Test {
 protected:
  ForgedAnnotations() { EXPECT_TRUE(state_.OnNode(EventType::kAdded, SignedNode()).ok()); }

  json SignedNode() {
    json node = MakeUniformNode("n", 1, "H200", 144384);
    node["metadata"]["uid"] = "node-uid";
    Write(node, keys_, kInventoryAnnotation,
          node["metadata"]["annotations"][kInventoryAnnotation].get<std::string>());
    return node;
  }
  // Pod `name` bound to n with a decision of `mib` MiB that the scheduler signed.
  json SignedPod(const std::string& name, uint64_t mib) {
    json pod = BoundPod(MakePod(name, {{"nvidia.com/gpumem", 1}}), "n", OneGpu(mib));
    Write(pod, keys_, kAllocationAnnotation, AllocationToJson(OneGpu(mib)));
    return pod;
  }
  uint64_t UsedMib() { return state_.Snapshot().nodes.at("n").gpus.at(0).used_mib; }
  std::string InventoryError() {
    const NodeState* node = state_.Find("n");
    std::lock_guard<std::mutex> lock(node->mu);
    return node->inventory_error;
  }

  annotations::Signing keys_ = Keys();
  ClusterState state_{DialectConfig{}, keys_};
};

TEST_F(ForgedAnnotations, ForgedAllocationFailedDoesNotFreeTheCharge) {
  json pod = SignedPod("p", 20000);
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
  ASSERT_EQ(UsedMib(), 20000u);
  pod["metadata"]["annotations"][kAllocationFailedAnnotation] = "x";
  ASSERT_TRUE(state_.OnPod(EventType::kModified, pod).ok());
  EXPECT_EQ(UsedMib(), 20000u);
  EXPECT_EQ(keys_.RefusedCount(kAllocationFailedAnnotation), 1u);
  // The same forged value in later events (status updates) is counted once.
  pod["status"]["conditions"] = json::array({{{"type", "Ready"}}});
  ASSERT_TRUE(state_.OnPod(EventType::kModified, pod).ok());
  EXPECT_EQ(keys_.RefusedCount(kAllocationFailedAnnotation), 1u);
}

TEST_F(ForgedAnnotations, AllocationFailedCopiedFromAnotherPodDoesNotFreeTheCharge) {
  json genuine = SignedPod("q", 1000);
  Write(genuine, keys_, kAllocationFailedAnnotation, "GPU n-gpu0 is unhealthy");
  json pod = SignedPod("p", 20000);
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
  for (const char* k : {kAllocationFailedAnnotation, annotations::kAllocationFailedSignature}) {
    pod["metadata"]["annotations"][k] = genuine["metadata"]["annotations"][k];
  }
  ASSERT_TRUE(state_.OnPod(EventType::kModified, pod).ok());
  EXPECT_EQ(UsedMib(), 20000u);
}

TEST_F(ForgedAnnotations, GenuineAllocationFailedStillFreesTheCharge) {
  json pod = SignedPod("p", 20000);
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
  Write(pod, keys_, kAllocationFailedAnnotation, "GPU n-gpu0 is gone");
  ASSERT_TRUE(state_.OnPod(EventType::kModified, pod).ok());
  EXPECT_EQ(UsedMib(), 0u);
  EXPECT_EQ(keys_.RefusedCount(kAllocationFailedAnnotation), 0u);
}

TEST_F(ForgedAnnotations, RewrittenAllocationKeepsTheVerifiedCharge) {
  json pod = SignedPod("p", 20000);
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
  // Rewritten to 1 MiB, keeping the old signature.
  pod["metadata"]["annotations"][kAllocationAnnotation] = AllocationToJson(OneGpu(1));
  ASSERT_TRUE(state_.OnPod(EventType::kModified, pod).ok());
  EXPECT_EQ(UsedMib(), 20000u);
  EXPECT_EQ(*state_.Snapshot().pods.at("default/p").allocation, OneGpu(20000));
  // Signed with a key the scheduler does not hold.
  Write(pod, Keys(kOtherKey), kAllocationAnnotation, AllocationToJson(OneGpu(1)));
  ASSERT_TRUE(state_.OnPod(EventType::kModified, pod).ok());
  EXPECT_EQ(UsedMib(), 20000u);
  // Removed altogether.
  pod["metadata"]["annotations"].erase(kAllocationAnnotation);
  pod["metadata"]["annotations"].erase(annotations::kAllocationSignature);
  ASSERT_TRUE(state_.OnPod(EventType::kModified, pod).ok());
  EXPECT_EQ(UsedMib(), 20000u);
  EXPECT_EQ(keys_.RefusedCount(kAllocationAnnotation), 3u);
  // The pod's end frees it as always.
  pod["status"]["phase"] = "Succeeded";
  ASSERT_TRUE(state_.OnPod(EventType::kModified, pod).ok());
  EXPECT_EQ(UsedMib(), 0u);
}

TEST_F(ForgedAnnotations, AllocationCopiedFromAnotherPodIsChargedAsReadAndCounted) {
  // A pod created bound (kube-system, no webhook) with a copy of another pod's signed decision:
  // nothing verified is known of it, so it is charged as read (its GPUs are not given twice) and
  // the refusal is counted; the node agent will not start it.
  json copy = SignedPod("genuine", 30000);
  copy["metadata"]["name"] = "copy";
  copy["metadata"]["uid"] = "uid-copy";
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, copy).ok());
  EXPECT_EQ(UsedMib(), 30000u);
  EXPECT_EQ(keys_.RefusedCount(kAllocationAnnotation), 1u);
  // A genuine verdict of the node agent frees it.
  Write(copy, keys_, kAllocationFailedAnnotation, "not signed by the Tessera scheduler");
  ASSERT_TRUE(state_.OnPod(EventType::kModified, copy).ok());
  EXPECT_EQ(UsedMib(), 0u);
}

TEST_F(ForgedAnnotations, TheSchedulersOwnBindStandsBeforeAndAfterTheWatchShowsIt) {
  testing::FakeBinder binder;
  Metrics metrics;
  Engine engine(state_, binder, {.watch_wait = std::chrono::milliseconds(20)}, &metrics);
  json pending = MakePod("p", {{"nvidia.com/gpumem", 20000}});
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, pending).ok());
  // kube-scheduler's bind may leave out the UID: the one the watch showed is signed and required.
  ASSERT_TRUE(engine.Bind({"default", "p", ""}, "n").ok());
  ASSERT_EQ(binder.bindings().size(), 1u);
  BindingRequest binding = binder.bindings()[0];
  EXPECT_EQ(binding.pod.uid, "uid-p");
  ASSERT_EQ(binding.annotations.count(annotations::kAllocationSignature), 1u);

  // A forged decision arriving before the Binding's own update does not replace the reservation.
  json forged = BoundPod(pending, "n", OneGpu(1));
  ASSERT_TRUE(state_.OnPod(EventType::kModified, forged).ok());
  EXPECT_EQ(UsedMib(), 20000u);
  // The Binding's annotations, as the API server puts them on the pod, verify.
  json bound = pending;
  bound["spec"]["nodeName"] = "n";
  for (const auto& [k, v] : binding.annotations) bound["metadata"]["annotations"][k] = v;
  ASSERT_TRUE(state_.OnPod(EventType::kModified, bound).ok());
  EXPECT_EQ(UsedMib(), 20000u);
  EXPECT_FALSE(state_.Snapshot().pods.at("default/p").reserved);
  EXPECT_EQ(keys_.RefusedCount(kAllocationAnnotation), 1u);
}

TEST_F(ForgedAnnotations, UnverifiedInventoryIsNotUsed) {
  json forged = MakeUniformNode("n", 1, "H200", 99999999);  // unsigned
  forged["metadata"]["uid"] = "node-uid";
  EXPECT_FALSE(state_.OnNode(EventType::kModified, forged).ok());
  EXPECT_EQ(InventoryError(),
            "the tessera.io/gpus of node n is not signed by a Tessera node agent (no "
            "tessera.io/gpus-signature)");
  EXPECT_EQ(state_.NodeCount(), 0u);
  // Another node's signed inventory, copied here.
  json other = SignedNode();
  other["metadata"]["uid"] = "another-node-uid";
  EXPECT_FALSE(state_.OnNode(EventType::kModified, other).ok());
  EXPECT_THAT(InventoryError(), HasSubstr("does not match"));
  EXPECT_EQ(keys_.RefusedCount(kInventoryAnnotation), 2u);
  // Heartbeats of the same forged node are counted once.
  EXPECT_FALSE(state_.OnNode(EventType::kModified, other).ok());
  EXPECT_EQ(keys_.RefusedCount(kInventoryAnnotation), 2u);
  ASSERT_TRUE(state_.OnNode(EventType::kModified, SignedNode()).ok());
  EXPECT_EQ(state_.NodeCount(), 1u);
}

TEST_F(ForgedAnnotations, RefusalsAreExportedAsAMetric) {
  Metrics metrics(keys_);
  json pod = SignedPod("p", 100);
  pod["metadata"]["annotations"][kAllocationFailedAnnotation] = "x";
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
  std::string text = metrics.Render(state_.Snapshot());
  EXPECT_THAT(text, HasSubstr("tessera_scheduler_unverified_annotations_total{annotation=\"tessera."
                              "io/allocation-failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tessera_scheduler_unverified_annotations_total{annotation=\"tessera."
                              "io/allocation\"} 0\n"));
}

TEST(UnsignedScheduler, TrustsWhatItReadsAndSignsNothing) {
  ClusterState state{DialectConfig{}};
  ASSERT_TRUE(state.OnNode(EventType::kAdded, MakeUniformNode("n", 1, "H200", 144384)).ok());
  testing::FakeBinder binder;
  Engine engine(state, binder, {.watch_wait = std::chrono::milliseconds(20)}, nullptr);
  ASSERT_TRUE(state.OnPod(EventType::kAdded, MakePod("p", {{"nvidia.com/gpumem", 10}})).ok());
  ASSERT_TRUE(engine.Bind({"default", "p", ""}, "n").ok());
  BindingRequest binding = binder.bindings().at(0);
  EXPECT_EQ(binding.pod.uid, "");
  EXPECT_EQ(binding.annotations.size(), 1u);
  EXPECT_EQ(binding.annotations.count(kAllocationAnnotation), 1u);
}

}  // namespace
}  // namespace tessera::scheduler
