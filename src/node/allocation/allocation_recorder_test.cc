#include "node/allocation/allocation_recorder.h"

#include <gtest/gtest.h>

#include "node/allocation/grant.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using nlohmann::json;
using namespace tessera::node::testing;

// An API that refuses the first `failures` writes.
class FlakyWriter : public ApiWriter {
 public:
  FlakyWriter(MemoryPodStore& api, int failures) : api_(api), failures_(failures) {}
  Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                             const AnnotationPatch& patch) override {
    if (failures_-- > 0) return Unavailable("the API server is away (test)");
    return api_.PatchPodAnnotations(ns, name, patch);
  }
  Status PatchNode(const std::string& node, const AnnotationPatch& annotations,
                   const AnnotationPatch& labels) override {
    return api_.PatchNode(node, annotations, labels);
  }
  Status CreatePodEvent(const std::string& ns, const std::string& name, const std::string& type,
                        const std::string& reason, const std::string& message) override {
    return api_.CreatePodEvent(ns, name, type, reason, message);
  }

 private:
  MemoryPodStore& api_;
  int failures_;
};

ContainerRef Owner(const std::string& container) {
  return {"default", "two", "uid-two", container};
}

// The pod cache lags behind the API server: containers of one pod start one after the other
// before the watch brings back the first one's tessera.io/allocated. No record may be lost.
TEST(AllocationRecorderTest, ContainersStartingBeforeTheCacheCatchesUpKeepEachOthersRecord) {
  MemoryPodStore cache{"n"};  // what the agent's informer shows: never updated here
  MemoryPodStore api{"n"};    // what the API server holds
  json pod = MakePod("two", "n", "nvidia.com/gpu", 1);
  cache.Put(pod);
  api.Put(pod);
  AllocationRecorder recorder(cache, api);
  recorder.Allocated(Owner("first"), "a1", {"GPU-1"});
  recorder.Allocated(Owner("second"), "a2", {"GPU-2"});
  ASSERT_TRUE(recorder.Flush());
  json recorded = json::parse(PodAnnotation(*api.Pod("default", "two"), kAllocatedAnnotation));
  EXPECT_EQ(recorded["first"]["allocation"], "a1");
  EXPECT_EQ(recorded["second"]["devices"][0], "GPU-2");

  // Once the cache shows the record, it is the base again: a third write keeps both.
  cache.Put(*api.Pod("default", "two"));
  recorder.Allocated(Owner("first"), "a3", {"GPU-1"});
  ASSERT_TRUE(recorder.Flush());
  recorded = json::parse(PodAnnotation(*api.Pod("default", "two"), kAllocatedAnnotation));
  EXPECT_EQ(recorded.size(), 2u) << recorded.dump();
  EXPECT_EQ(recorded["first"]["allocation"], "a3");
}

// Regression: PreStartContainer made these writes itself, with retries, inside kubelet's
// deadline for the call.
TEST(AllocationRecorderTest, WritesAreQueuedAndTriedAgainUntilTheyLand) {
  MemoryPodStore store{"n"};
  store.Put(MakePod("two", "n", "nvidia.com/gpu", 1));
  FlakyWriter writer(store, 2);
  AllocationRecorder recorder(store, writer);
  auto start = std::chrono::steady_clock::now();
  recorder.Failed(Owner("main"), "GPU-9 is not on this node");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  ASSERT_TRUE(recorder.Flush(std::chrono::seconds(10)));
  EXPECT_EQ(PodAnnotation(*store.Pod("default", "two"), kAllocationFailedAnnotation),
            "GPU-9 is not on this node");
}

TEST(AllocationRecorderTest, APodReplacedByOneOfTheSameNameGetsNoRecord) {
  MemoryPodStore store{"n"};
  json pod = MakePod("two", "n", "nvidia.com/gpu", 1);
  pod["metadata"]["uid"] = "uid-new";
  store.Put(pod);
  AllocationRecorder recorder(store, store);
  recorder.Allocated(Owner("main"), "a1", {"GPU-1"});
  ASSERT_TRUE(recorder.Flush());
  EXPECT_EQ(PodAnnotation(*store.Pod("default", "two"), kAllocatedAnnotation), "");
}

}  // namespace
}  // namespace tessera::node
