#include "scheduler/filter_memory.h"

#include <gtest/gtest.h>

#include "scheduler/extender.h"
#include "scheduler/fake_binder.h"
#include "scheduler/inspect.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::MakePod;
using testing::MakeUniformNode;

class FilterMemoryTest : public ::testing::Test {
 protected:
  FilterMemoryTest() {
    EXPECT_TRUE(
        state_.OnNode(EventType::kAdded, MakeUniformNode("small", 1, "SimGPU-3090", 24268)).ok());
    EXPECT_TRUE(state_.OnNode(EventType::kAdded, MakeUniformNode("big", 2, "A100", 40960)).ok());
  }
  // A pod the watch shows pending, asking for `mib` on one GPU.
  json Pending(const std::string& name, int mib) {
    json pod = MakePod(name, {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", mib}});
    EXPECT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
    return pod;
  }
  // What kube-scheduler sends to /filter for `pod`.
  static json FilterArgs(const json& pod, std::vector<std::string> names) {
    return {{"Pod", pod}, {"NodeNames", names}};
  }

  ClusterState state_{DialectConfig{}};
  testing::FakeBinder binder_;
  Metrics metrics_;
  Engine engine_{state_, binder_, {}, &metrics_};
  std::chrono::system_clock::time_point now_ =
      std::chrono::system_clock::from_time_t(1'800'000'000);
  FilterMemory memory_{state_, 3, [this] { return now_; }};
  Extender extender_{engine_, state_, metrics_, nullptr, &memory_};
};

TEST_F(FilterMemoryTest, KeepsTheLastFilterOfAPendingPodInTheFiltersWords) {
  json pod = Pending("p", 30000);
  ASSERT_TRUE(extender_.Filter(FilterArgs(pod, {"small", "big", "ghost"})).ok());
  std::map<std::string, FilterRecord> all = memory_.All();
  ASSERT_EQ(all.count("default/p"), 1u);
  const FilterRecord& r = all["default/p"];
  EXPECT_EQ(r.uid, "uid-p");
  EXPECT_EQ(r.time, now_);
  EXPECT_EQ(r.nodes_checked, 3u);
  EXPECT_EQ(r.fits, std::vector<std::string>{"big"});
  ASSERT_EQ(r.reasons.size(), 2u);  // by node name
  EXPECT_EQ(r.reasons[0].node, "ghost");
  EXPECT_EQ(r.reasons[0].reason, "node has no Tessera GPU inventory (never seen)");
  EXPECT_TRUE(r.reasons[0].unresolvable);
  EXPECT_EQ(r.reasons[1].node, "small");
  EXPECT_EQ(r.reasons[1].reason,
            "insufficient GPU memory: need 30000 MiB on 1 GPU, largest free 24268 MiB (GPU 0, "
            "SimGPU-3090)");
  EXPECT_TRUE(r.reasons[1].unresolvable);

  // The next filter replaces it.
  now_ += std::chrono::seconds(5);
  ASSERT_TRUE(extender_.Filter(FilterArgs(pod, {"small"})).ok());
  EXPECT_EQ(memory_.All()["default/p"].nodes_checked, 1u);
  EXPECT_EQ(memory_.All()["default/p"].time, now_);

  // /inspect carries it on the pending pod.
  InspectExtras extras{.filters = memory_.All()};
  json inspect = InspectJson(state_.Snapshot(), {}, extras);
  ASSERT_EQ(inspect["pending"].size(), 1u);
  EXPECT_EQ(inspect["pending"][0]["filter"],
            json::parse(R"j({"time":"2027-01-15T08:00:05Z","nodesChecked":1,"fits":[],
              "fitsLeftOut":0,"reasons":[{"node":"small","unresolvable":true,"reason":
              "insufficient GPU memory: need 30000 MiB on 1 GPU, largest free 24268 MiB (GPU 0, SimGPU-3090)"}],
              "reasonsLeftOut":0})j"));
}

// Nothing a client sends makes it grow: a pod the watch has not shown, or shows bound, is not
// recorded, and neither is a pod that asks for no GPU.
TEST_F(FilterMemoryTest, RecordsOnlyPodsTheWatchShowsPending) {
  json stranger = MakePod("stranger", {{"nvidia.com/gpu", 1}});
  ASSERT_TRUE(extender_.Filter(FilterArgs(stranger, {"big"})).ok());
  json cpu = MakePod("cpu", json::object());
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, cpu).ok());
  ASSERT_TRUE(extender_.Filter(FilterArgs(cpu, {"big"})).ok());
  EXPECT_EQ(memory_.size(), 0u);
}

TEST_F(FilterMemoryTest, ForgetsAPodOnceItIsPlacedFinishedDeletedOrReplaced) {
  for (const char* name : {"bound", "done", "deleted", "replaced", "stays"}) {
    ASSERT_TRUE(extender_.Filter(FilterArgs(Pending(name, 1000), {"big"})).ok());
  }
  // At most 3 pods are kept: the two oldest went.
  EXPECT_EQ(memory_.size(), 3u);
  for (const char* name : {"bound", "done"}) {
    now_ += std::chrono::seconds(1);
    ASSERT_TRUE(extender_.Filter(FilterArgs(Pending(name, 1000), {"big"})).ok());
  }
  ASSERT_EQ(memory_.size(), 3u);
  std::map<std::string, FilterRecord> all = memory_.All();
  EXPECT_EQ(all.count("default/bound") + all.count("default/done"), 2u);

  json bound = MakePod("bound", {{"nvidia.com/gpu", 1}});
  bound["spec"]["nodeName"] = "big";
  memory_.OnPod(EventType::kModified, bound);
  json done = MakePod("done", {{"nvidia.com/gpu", 1}});
  done["status"]["phase"] = "Failed";
  memory_.OnPod(EventType::kModified, done);
  EXPECT_EQ(memory_.size(), 1u);

  json replaced = MakePod("replaced", {{"nvidia.com/gpu", 1}});
  ASSERT_TRUE(extender_.Filter(FilterArgs(Pending("replaced", 1000), {"big"})).ok());
  replaced["metadata"]["uid"] = "another";
  memory_.OnPod(EventType::kAdded, replaced);
  EXPECT_EQ(memory_.All().count("default/replaced"), 0u);

  json deleted = MakePod("deleted", {{"nvidia.com/gpu", 1}});
  ASSERT_TRUE(extender_.Filter(FilterArgs(Pending("deleted", 1000), {"big"})).ok());
  memory_.OnPod(EventType::kDeleted, deleted);
  EXPECT_EQ(memory_.All().count("default/deleted"), 0u);
  // A pod still pending keeps its record through its updates.
  std::vector<std::string> left;
  for (auto& [key, r] : memory_.All()) left.push_back(key);
  for (const std::string& key : left) {
    memory_.OnPod(EventType::kModified, MakePod(key.substr(8), {{"nvidia.com/gpu", 1}}));
  }
  EXPECT_EQ(memory_.size(), left.size());
}

// A bind (or delete) that the watch shows between Record's check and its insert finds no record
// to drop; Record itself must not keep one then. The clock, read between the two, binds it.
TEST_F(FilterMemoryTest, APodBoundWhileItsFilterIsRecordedLeavesNoRecord) {
  json pod = Pending("raced", 1000);
  json bound = pod;
  bound["spec"]["nodeName"] = "big";
  FilterMemory memory(state_, 3, [&] {
    EXPECT_TRUE(state_.OnPod(EventType::kModified, bound).ok());
    return now_;
  });
  FilterResult result;
  result.fits.push_back("big");
  memory.Record({"default", "raced", "uid-raced"}, result);
  EXPECT_EQ(memory.size(), 0u);
  EXPECT_EQ(memory.All().count("default/raced"), 0u);
}

TEST_F(FilterMemoryTest, ListsAtMostTwentyNodesOfEachKindAndCountsTheRest) {
  FilterResult result;
  for (int i = 0; i < 70; ++i) {
    result.fits.push_back("fit-" + std::to_string(100 + i));
    result.failed.emplace_back("full-" + std::to_string(100 + i), "no room");
  }
  result.unresolvable.emplace_back("aaa", "never");
  json pod = Pending("many", 1000);
  memory_.Record({"default", "many", "uid-many"}, result);
  FilterRecord r = memory_.All()["default/many"];
  EXPECT_EQ(r.nodes_checked, 141u);
  EXPECT_EQ(r.fits.size(), FilterMemory::kMaxListed);
  EXPECT_EQ(r.fits_left_out, 50u);
  EXPECT_EQ(r.fits.front(), "fit-100");
  ASSERT_EQ(r.reasons.size(), FilterMemory::kMaxListed);
  EXPECT_EQ(r.reasons_left_out, 51u);
  EXPECT_EQ(r.reasons.front().node, "aaa");  // sorted by name before the cut
  EXPECT_TRUE(r.reasons.front().unresolvable);
  EXPECT_EQ(r.reasons.back().node, "full-118");
}

}  // namespace
}  // namespace tessera::scheduler
