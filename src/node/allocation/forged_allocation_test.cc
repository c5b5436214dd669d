// A user outside the webhook's reach (kube-system, tessera-system) can create a pod bound to a
// node with a hand-written tessera.io/allocation, or rewrite a pod's record. With signing on the
// node agent acts only on what Tessera signed; before, each test's forgery was honoured.
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "annotations/names.h"
#include "node/allocation/allocator.h"
#include "node/metrics/metrics.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace tessera::node::testing;

const std::string kNode = "node-1";
const ResourceSpec kGpu{"nvidia.com/gpu", ResourceKind::kVgpuSlots};
constexpr char kKey[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

class ForgedAllocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opts_.node_name = kNode;
    opts_.state_dir = dir_.path() + "/state";
    opts_.cdi_dir = dir_.path() + "/cdi";
    opts_.signing = keys_;
    allocator_ = std::make_unique<Allocator>(opts_, std::vector<ResourceSpec>{kGpu}, store_,
                                             recorder_, kubelet_);
    ASSERT_TRUE(allocator_->Init().ok());
    allocator_->SetGpus(TestGpus(2));
  }
  // A pod whose decision the scheduler signed.
  json SignedPod(const std::string& name, const std::vector<TestDevice>& decision) {
    json pod = MakePod(name, kNode, "nvidia.com/gpu", 1, decision);
    auto& a = pod["metadata"]["annotations"];
    for (const auto& [k, v] :
         keys_.Signed(kAllocationAnnotation, "uid-" + name, a[kAllocationAnnotation])) {
      a[k] = v;
    }
    return pod;
  }
  // Allocate, kubelet's checkpoint entry for the pod's container, PreStartContainer.
  Status Start(const std::string& pod, std::string* id = nullptr) {
    auto answer = allocator_->Allocate("nvidia.com/gpu", {"1-0"});
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    if (!answer.ok()) return answer.status();
    kubelet_.Add("uid-" + pod, "main", "nvidia.com/gpu", {"1-0"}, answer->allocation_id);
    if (id) *id = answer->allocation_id;
    return allocator_->PreStart("nvidia.com/gpu", {"1-0"});
  }
  std::string Annotation(const std::string& pod, const std::string& key) {
    EXPECT_TRUE(recorder_.Flush());
    return PodAnnotation(*store_.Pod("default", pod), key);
  }

  annotations::Signing keys_{annotations::KeyRing::Parse(kKey, "keys").value()};
  TempDir dir_;
  AllocatorOptions opts_;
  MemoryPodStore store_{kNode};
  AllocationRecorder recorder_{store_, store_, keys_};
  FakeDeviceAssignments kubelet_;
  std::unique_ptr<Allocator> allocator_;
};

TEST_F(ForgedAllocationTest, HandWrittenAllocationIsRefusedAndGivesNoGpu) {
  store_.Put(MakePod("forged", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 81920, 100}}));
  std::string id;
  Status s = Start("forged", &id);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "the tessera.io/allocation of pod default/forged is not signed by the Tessera "
            "scheduler (no tessera.io/allocation-signature); container main is not started");
  EXPECT_THAT(Read(allocator_->AllocationDir(id) + "/limits"), HasSubstr("devices=0\n"));
  EXPECT_EQ(keys_.RefusedCount(kAllocationAnnotation), 1u);
  // Not the agent's verdict on a decision of the scheduler's: the pod is not marked.
  EXPECT_EQ(Annotation("forged", kAllocationFailedAnnotation), "");
  EXPECT_EQ(Annotation("forged", kAllocatedAnnotation), "");
  std::string metrics;
  RenderUnverified(metrics, keys_);
  EXPECT_THAT(metrics, HasSubstr("tessera_node_unverified_annotations_total{annotation=\"tessera."
                                 "io/allocation\"} 1\n"));
}

TEST_F(ForgedAllocationTest, AllocationCopiedFromAnotherPodIsRefused) {
  json copy = SignedPod("genuine", {{"GPU-1", 81920, 100}});
  copy["metadata"]["name"] = "copy";
  copy["metadata"]["uid"] = "uid-copy";
  store_.Put(copy);
  Status s = Start("copy");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("the tessera.io/allocation of pod default/copy does not "
                                     "verify: its signature (key id 630dcd29) does not match"));
}

TEST_F(ForgedAllocationTest, RewrittenAllocationIsRefused) {
  json pod = SignedPod("p", {{"GPU-1", 1000, 10}});
  pod["metadata"]["annotations"][kAllocationAnnotation] =
      MakePod("p", kNode, "nvidia.com/gpu", 1,
              {{"GPU-1", 81920, 100}})["metadata"]["annotations"][kAllocationAnnotation];
  store_.Put(pod);
  EXPECT_EQ(Start("p").code(), StatusCode::kFailedPrecondition);
}

TEST_F(ForgedAllocationTest, SignedAllocationIsHonouredAndItsRecordSigned) {
  store_.Put(SignedPod("p", {{"GPU-1", 4096, 30}}));
  std::string id;
  ASSERT_TRUE(Start("p", &id).ok());
  EXPECT_THAT(Read(allocator_->AllocationDir(id) + "/limits"), HasSubstr("uuid.0=GPU-1\n"));
  EXPECT_THAT(Annotation("p", kAllocatedAnnotation), HasSubstr(id));
  EXPECT_TRUE(keys_.Check(*store_.Pod("default", "p"), kAllocatedAnnotation, "pod default/p").ok());
}

TEST_F(ForgedAllocationTest, GenuineVerdictIsSigned) {
  store_.Put(SignedPod("p", {{"GPU-7", 4096, 30}}));  // a GPU this node does not have
  EXPECT_EQ(Start("p").code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(Annotation("p", kAllocationFailedAnnotation), HasSubstr("GPU-7"));
  EXPECT_TRUE(
      keys_.Check(*store_.Pod("default", "p"), kAllocationFailedAnnotation, "pod default/p").ok());
}

TEST_F(ForgedAllocationTest, ForgedRecordIsNotSignedAlongWithTheAgentsOwn) {
  json pod = SignedPod("p", {{"GPU-1", 4096, 30}});
  pod["metadata"]["annotations"][kAllocatedAnnotation] =
      R"({"ghost":{"allocation":"x","devices":["GPU-0"]}})";
  store_.Put(pod);
  ASSERT_TRUE(Start("p").ok());
  json recorded = json::parse(Annotation("p", kAllocatedAnnotation));
  EXPECT_TRUE(recorded.contains("main"));
  EXPECT_FALSE(recorded.contains("ghost")) << recorded.dump();
  EXPECT_EQ(keys_.RefusedCount(kAllocatedAnnotation), 1u);
}

TEST_F(ForgedAllocationTest, PodWithoutADecisionStillGetsTheGpusBehindItsDevices) {
  store_.Put(MakePod("plain", kNode, "nvidia.com/gpu", 1));
  std::string id;
  ASSERT_TRUE(Start("plain", &id).ok());
  EXPECT_THAT(Read(allocator_->AllocationDir(id) + "/limits"), HasSubstr("uuid.0=GPU-1\n"));
}

}  // namespace
}  // namespace tessera::node
