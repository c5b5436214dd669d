#include "scheduler/preemptor.h"

#include <gtest/gtest.h>

#include <thread>

#include "scheduler/engine.h"
#include "scheduler/fake_binder.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using testing::BoundPod;
using testing::FakeBinder;
using testing::MakePod;
using testing::MakeUniformNode;

class FakeEvictor : public Evictor {
 public:
  Status Evict(const Eviction& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    evicted_.push_back(e);
    return Status::Ok();
  }
  std::vector<Eviction> WaitFor(size_t n) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (evicted_.size() >= n) return evicted_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::lock_guard<std::mutex> lock(mu_);
    return evicted_;
  }

 private:
  std::mutex mu_;
  std::vector<Eviction> evicted_;
};

nlohmann::json WithPriority(nlohmann::json pod, int priority) {
  pod["spec"]["priority"] = priority;
  return pod;
}

Allocation On(const std::string& node, const std::string& uuid, uint64_t mib) {
  return {node, {{"main", false, ComputeMode::kHard, {{uuid, mib, 0, 0, false}}}}};
}

class PreemptorTest : public ::testing::Test {
 protected:
  PreemptorTest() {
    // Two nodes of one 24000 MiB GPU each, both full with low-priority pods of 12000.
    for (const char* node : {"a", "b"}) {
      EXPECT_TRUE(state_.OnNode(EventType::kAdded, MakeUniformNode(node, 1, "A10", 24000)).ok());
      for (int i = 0; i < 2; ++i) {
        std::string name = std::string(node) + "-low" + std::to_string(i);
        nlohmann::json pod = WithPriority(MakePod(name, {{"nvidia.com/gpumem", 12000}}), i);
        victims_[name] = BoundPod(pod, node, On(node, std::string(node) + "-gpu0", 12000));
        EXPECT_TRUE(state_.OnPod(EventType::kAdded, victims_[name]).ok());
      }
    }
  }

  PodRequest Request(const nlohmann::json& pod) {
    Result<PodRequest> r = ParsePod(pod, DialectConfig{});
    EXPECT_TRUE(r.ok());
    return *r;
  }
  // The pod as its pod events show it (pending), and the filter's failed nodes.
  std::vector<std::string> Pending(const nlohmann::json& pod) {
    EXPECT_TRUE(state_.OnPod(EventType::kAdded, pod).ok());
    PodId id{"default", pod["metadata"]["name"], pod["metadata"]["uid"]};
    FilterResult f = engine_.Filter(id, Request(pod), names_);
    EXPECT_TRUE(f.fits.empty());
    std::vector<std::string> failed;
    for (const auto& [name, reason] : f.failed) failed.push_back(name);
    return failed;
  }

  ClusterState state_{DialectConfig{}};
  FakeBinder binder_;
  Engine engine_{state_, binder_, {}, nullptr};
  FakeEvictor evictor_;
  Preemptor preemptor_{state_, evictor_, {}, nullptr};
  std::vector<std::string> names_{"a", "b"};
  std::map<std::string, nlohmann::json> victims_;
};

TEST_F(PreemptorTest, APodThatFitsNowhereEvictsTheFewestLowerPriorityPodsOnOneNode) {
  nlohmann::json hi = WithPriority(MakePod("hi", {{"nvidia.com/gpumem", 10000}}), 100);
  const PodId id{"default", "hi", "uid-hi"};
  std::vector<std::string> failed = Pending(hi);
  ASSERT_EQ(failed.size(), 2u);
  auto note = preemptor_.AfterNoFit(id, Request(hi), failed);
  ASSERT_TRUE(note);
  EXPECT_EQ(note->first, "a") << "one victim on either node; the lower priority, then the name";
  EXPECT_NE(note->second.find("preempting 1 lower-priority pod(s) to make room (default/a-low0)"),
            std::string::npos)
      << note->second;
  std::vector<Eviction> evicted = evictor_.WaitFor(1);
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].victim.Key(), "default/a-low0");
  EXPECT_EQ(evicted[0].victim.uid, "uid-a-low0");
  EXPECT_EQ(evicted[0].node, "a");

  // While the victim ends, a later filter reports the preemption and evicts nothing more.
  note = preemptor_.AfterNoFit(id, Request(hi), Pending(hi));
  ASSERT_TRUE(note);
  EXPECT_NE(note->second.find("preemption under way: waiting for 1 preempted pod(s) to end"),
            std::string::npos)
      << note->second;
  EXPECT_EQ(evictor_.WaitFor(2).size(), 1u);

  // The victim is gone: its GPU memory is held for "hi"; a pod of lower priority does not get
  // it, "hi" does, and binds there.
  ASSERT_TRUE(state_.OnPod(EventType::kDeleted, victims_["a-low0"]).ok());
  nlohmann::json lower = WithPriority(MakePod("lower", {{"nvidia.com/gpumem", 10000}}), 50);
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, lower).ok());
  EXPECT_TRUE(
      engine_.Filter({"default", "lower", "uid-lower"}, Request(lower), names_).fits.empty());
  EXPECT_EQ(engine_.Filter(id, Request(hi), names_).fits, std::vector<std::string>{"a"});
  ASSERT_TRUE(engine_.Bind(id, "a").ok());
  EXPECT_FALSE(state_.NominatedNode(id)) << "bound: the nomination ends";
}

TEST_F(PreemptorTest, NothingIsEvictedWhenNoNodeCouldMakeRoom) {
  // Equal priority to every pod there: none is a victim.
  nlohmann::json same = WithPriority(MakePod("same", {{"nvidia.com/gpumem", 10000}}), 0);
  EXPECT_FALSE(
      preemptor_.AfterNoFit({"default", "same", "uid-same"}, Request(same), Pending(same)));
  // preemptionPolicy Never.
  nlohmann::json never = WithPriority(MakePod("never", {{"nvidia.com/gpumem", 10000}}), 100);
  never["spec"]["preemptionPolicy"] = "Never";
  EXPECT_FALSE(
      preemptor_.AfterNoFit({"default", "never", "uid-never"}, Request(never), Pending(never)));
  // A pod its pod events have not shown: its priority is unknown.
  nlohmann::json unseen = WithPriority(MakePod("unseen", {{"nvidia.com/gpumem", 10000}}), 100);
  EXPECT_FALSE(preemptor_.AfterNoFit({"default", "unseen", ""}, Request(unseen), names_));
  EXPECT_TRUE(evictor_.WaitFor(1).empty());
}

TEST_F(PreemptorTest, ChooseWidensKubeSchedulersCandidateAndKeepsOnlyTheBest) {
  nlohmann::json hi = WithPriority(MakePod("hi", {{"nvidia.com/gpumem", 20000}}), 100);
  ASSERT_TRUE(state_.OnPod(EventType::kAdded, hi).ok());
  // kube-scheduler proposes a pod without GPUs on "a" and one GPU pod on "b": both nodes need
  // their two GPU pods gone; "b" already has one of them proposed.
  std::vector<Preemptor::Candidate> candidates = {{"a", {"uid-cpu-only"}, 0},
                                                  {"b", {"uid-b-low1"}, 0}};
  auto chosen = preemptor_.Choose({"default", "hi", "uid-hi"}, Request(hi), 100, candidates);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->node, "a") << "two GPU victims of the same priorities on either node: the "
                                  "node name decides";
  std::set<std::string> victims(chosen->victims.begin(), chosen->victims.end());
  EXPECT_EQ(victims, (std::set<std::string>{"uid-cpu-only", "uid-a-low0", "uid-a-low1"}));
  EXPECT_EQ(state_.NominatedNode({"default", "hi", ""}), "a");
  EXPECT_TRUE(evictor_.WaitFor(1).empty()) << "kube-scheduler evicts these itself";
  // A pod that cannot fit even on an emptied node gets no candidate.
  nlohmann::json huge = WithPriority(MakePod("huge", {{"nvidia.com/gpumem", 30000}}), 100);
  EXPECT_FALSE(preemptor_.Choose({"default", "huge", ""}, Request(huge), 100, candidates));
}

}  // namespace
}  // namespace tessera::scheduler
