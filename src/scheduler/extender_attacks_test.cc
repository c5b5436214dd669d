// What a hostile extender client could do before, each as a test named after the attack: the
// extender's answers depend only on the scheduler's own view from the API (node and pod watches),
// nothing a client sends is remembered, and bind binds only pods the watch shows unbound.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "scheduler/engine.h"
#include "scheduler/extender.h"
#include "scheduler/fake_binder.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using testing::Gpu;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeUniformNode;

class ExtenderAttacks : public ::testing::Test {
 protected:
  ExtenderAttacks()
      : engine_(state_, binder_, {.scheduler_name = "tessera", .watch_wait = milliseconds(50)},
                &metrics_),
        extender_(engine_, state_, metrics_) {
    EXPECT_TRUE(
        state_.OnNode(EventType::kAdded, MakeUniformNode("node-b", 1, "H200", 144384)).ok());
  }

  // A pod of the tessera profile, as the pod watch shows it.
  json WatchedPod(const std::string& name, const testing::Resources& limits) {
    json pod = MakePod(name, limits);
    pod["spec"]["schedulerName"] = "tessera";
    EXPECT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
    return pod;
  }
  json Filter(const json& pod, const json& nodes) {
    Result<std::string> r =
        extender_.Filter({{"Pod", pod}, {"Nodes", {{"items", nodes}}}, {"NodeNames", nullptr}});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? json::parse(*r) : json();
  }
  std::string Bind(const std::string& name, const std::string& uid, const std::string& node) {
    Result<std::string> r = extender_.Bind(
        {{"PodName", name}, {"PodNamespace", "default"}, {"PodUID", uid}, {"Node", node}});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? json::parse(*r)["Error"].get<std::string>() : "";
  }

  ClusterState state_{DialectConfig{}};
  Metrics metrics_;
  testing::FakeBinder binder_;
  Engine engine_;
  Extender extender_;
};

TEST_F(ExtenderAttacks, ForgedNodeInventoryInFilterNeitherFitsNorSticks) {
  // Before: node-b forged as one 99,999,999 MiB GPU let a 500,000 MiB pod onto a 144,384 MiB card.
  json forged = MakeNode("node-b", {Gpu("node-b-gpu0", 0, "H200", 99999999)});
  json pod = WatchedPod("huge", {{"nvidia.com/gpumem", 500000}});
  json f = Filter(pod, json::array({forged}));
  EXPECT_EQ(f["Nodes"]["items"].size(), 0u);
  EXPECT_NE(f["FailedAndUnresolvableNodes"]["node-b"].get<std::string>().find("144384"),
            std::string::npos)
      << f.dump();
  EXPECT_EQ(state_.Snapshot().nodes.at("node-b").gpus[0].info.memory_mib, 144384u);
  EXPECT_NE(Bind("huge", "uid-huge", "node-b"), "");
  EXPECT_TRUE(binder_.bindings().empty());
}

TEST_F(ExtenderAttacks, NodeListedWithoutItsAnnotationKeepsItsGpus) {
  json bare = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-b"}}}};
  json pod = WatchedPod("p", {{"nvidia.com/gpumem", 1000}});
  json f = Filter(pod, json::array({bare}));
  ASSERT_EQ(f["Nodes"]["items"].size(), 1u) << f.dump();
  EXPECT_TRUE(state_.Snapshot().nodes.at("node-b").present);
}

TEST_F(ExtenderAttacks, PhantomNodesInFilterAreNeitherRememberedNorMetricSeries) {
  auto series = [this] {
    std::string text = metrics_.Render(state_.Snapshot());
    return std::count(text.begin(), text.end(), '\n');
  };
  const auto series_before = series();
  json pod = WatchedPod("p", {{"nvidia.com/gpumem", 1000}});
  json nodes = json::array();
  for (int i = 0; i < 2000; ++i) {
    nodes.push_back(MakeUniformNode("phantom-" + std::to_string(i), 8, "H200", 144384));
  }
  for (int round = 0; round < 5; ++round) Filter(pod, nodes);
  EXPECT_EQ(state_.Snapshot().nodes.size(), 1u);
  EXPECT_EQ(series(), series_before) << "the phantom nodes got metric series";
}

TEST_F(ExtenderAttacks, FilterForMadeUpPodsRemembersNothing) {
  // Before: 3,000 made-up names stayed in "Pending pods" for good.
  for (int i = 0; i < 3000; ++i) {
    Result<std::string> r = extender_.Filter(
        {{"Pod", MakePod("made-up-" + std::to_string(i), {{"nvidia.com/gpumem", 1000}})},
         {"NodeNames", {"node-b"}}});
    ASSERT_TRUE(r.ok());
  }
  EXPECT_TRUE(state_.Snapshot().pods.empty());
}

TEST_F(ExtenderAttacks, BindOfAPodTheWatchNeverShowedIsRefused) {
  Result<std::string> f = extender_.Filter(
      {{"Pod", MakePod("ghost", {{"nvidia.com/gpumem", 1000}})}, {"NodeNames", {"node-b"}}});
  ASSERT_TRUE(f.ok());
  std::string error = Bind("ghost", "uid-ghost", "node-b");
  EXPECT_NE(error.find("pod default/ghost is not an unbound pod the Tessera scheduler knows"),
            std::string::npos)
      << error;
  EXPECT_TRUE(binder_.bindings().empty());
}

TEST_F(ExtenderAttacks, RebindOfABoundPodIsRefusedNamingItsNode) {
  json pod = WatchedPod("p", {{"nvidia.com/gpumem", 1000}});
  ASSERT_EQ(Bind("p", "uid-p", "node-b"), "");
  std::string error = Bind("p", "uid-p", "node-b");
  EXPECT_EQ(error, "pod default/p is being bound to node node-b already");
  EXPECT_EQ(binder_.bindings().size(), 1u);
}

TEST_F(ExtenderAttacks, BindWithAWrongPodUidIsRefusedNamingBothUids) {
  WatchedPod("p", {{"nvidia.com/gpumem", 1000}});
  EXPECT_EQ(Bind("p", "uid-other", "node-b"),
            "pod default/p has UID uid-p, not uid-other (the pod of that UID is gone)");
  EXPECT_TRUE(binder_.bindings().empty());
}

TEST_F(ExtenderAttacks, BindOfAnotherSchedulersPodIsRefused) {
  json pod = MakePod("theirs", {{"nvidia.com/gpumem", 1000}});  // no schedulerName: the default
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
  EXPECT_EQ(Bind("theirs", "uid-theirs", "node-b"),
            "pod default/theirs has schedulerName \"default-scheduler\"; the Tessera scheduler "
            "binds only pods of \"tessera\"");
  EXPECT_TRUE(binder_.bindings().empty());
}

TEST_F(ExtenderAttacks, BindWaitsForAPodEventThatIsAMomentLate) {
  json pod = MakePod("late", {{"nvidia.com/gpumem", 1000}});
  pod["spec"]["schedulerName"] = "tessera";
  std::thread watch([&] {
    std::this_thread::sleep_for(milliseconds(10));
    EXPECT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
  });
  EXPECT_EQ(Bind("late", "uid-late", "node-b"), "");
  watch.join();
  EXPECT_EQ(binder_.bindings().size(), 1u);
}

}  // namespace
}  // namespace tessera::scheduler
