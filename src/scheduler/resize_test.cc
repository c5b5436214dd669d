// Resizing a running container (docs/resize.md): the decision against the node's GPUs, the
// state's charge while the answer is written, the Resizer's answers and Events with a fake API,
// the quota at resize, and what the webhook refuses.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "annotations/names.h"
#include "scheduler/annotation_guard.h"
#include "scheduler/cluster_state.h"
#include "scheduler/quota_ledger.h"
#include "scheduler/resize.h"
#include "scheduler/resize_admission.h"
#include "scheduler/resizer.h"
#include "scheduler/test_objects.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;
using testing::BoundPod;
using testing::MakeNode;
using testing::MakePod;

// A pod "p" holding 4096 MiB and 30% of GPU-a on node n1 (a 24000 MiB GPU).
Allocation Decision(uint64_t mib = 4096, int cores = 30, const std::string& uuid = "GPU-a") {
  return {.node = "n1",
          .containers = {
              {.name = "main", .devices = {{.uuid = uuid, .memory_mib = mib, .cores = cores}}}}};
}

json Pod(const std::string& name, const Allocation& decision) {
  json pod = BoundPod(
      MakePod(name,
              {{"nvidia.com/gpumem", 4096}, {"nvidia.com/gpucores", 30}, {"nvidia.com/gpu", 1}}),
      "n1", decision);
  pod["metadata"]["resourceVersion"] = "1";
  return pod;
}

json WithRequest(json pod, const ResizeRequest& request) {
  pod["metadata"]["annotations"][annotations::kResize] = ResizeRequestToJson(request);
  return pod;
}

std::vector<GpuSlot> Slots(uint64_t total, uint64_t used, int cores_used, int pods = 1) {
  GpuSlot s;
  s.info = testing::Gpu("GPU-a", 0, "L4", total);
  s.used_mib = used;
  s.used_cores = cores_used;
  s.pods = pods;
  return {s};
}

TEST(ResizeDecision, GrowsInPlaceWhenTheGpuHasRoom) {
  // 4096 of ours and 12000 of others used on 24000: growing to 8192 leaves 3808.
  Result<Allocation> r =
      ResizeDecision(Decision(), {.id = "1", .container = "main", .memory_mib = 8192, .cores = 40},
                     Slots(24000, 16096, 60, 2));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const DeviceAllocation& d = r->containers[0].devices[0];
  EXPECT_EQ(d.uuid, "GPU-a");
  EXPECT_EQ(d.memory_mib, 8192u);
  EXPECT_EQ(d.cores, 40);
  EXPECT_TRUE(r->containers[0].resized);
}

TEST(ResizeDecision, AGrowthThatDoesNotFitIsRefusedInTheFiltersWords) {
  // Others hold 18000 of 24000: the container may have 6000 there.
  Result<Allocation> r = ResizeDecision(
      Decision(), {.id = "1", .container = "main", .memory_mib = 8192}, Slots(24000, 22096, 30));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "container \"main\": insufficient GPU memory: need 8192 MiB on 1 GPU, largest free "
            "6000 MiB (GPU 0, L4)");
  r = ResizeDecision(Decision(), {.id = "1", .container = "main", .cores = 80},
                     Slots(24000, 4096, 90));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "container \"main\": insufficient GPU compute: need 80% cores on 1 GPU, most free "
            "40% (GPU 0, L4)");
}

TEST(ResizeDecision, AHugeGrowthIsRefusedRatherThanWrappingAround) {
  // Others hold 12000 MiB: 12000 + (2^64 - 4096) wraps to 7904, which would look like room.
  Result<Allocation> r =
      ResizeDecision(Decision(), {.id = "1", .container = "main", .memory_mib = UINT64_MAX - 4095},
                     Slots(24000, 16096, 30, 2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "container \"main\": insufficient GPU memory: need 18446744073709547520 MiB on 1 "
            "GPU, largest free 12000 MiB (GPU 0, L4)");
}

TEST(ResizeDecision, AShrinkOnAGpuGoneFromTheInventoryIsGrantedAGrowthIsNot) {
  Result<Allocation> r = ResizeDecision(
      Decision(4096, 30, "GPU-gone"),
      {.id = "1", .container = "main", .memory_mib = 1024, .cores = 20}, Slots(24000, 4096, 30));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->containers[0].devices[0].memory_mib, 1024u);
  r = ResizeDecision(Decision(4096, 30, "GPU-gone"),
                     {.id = "1", .container = "main", .memory_mib = 1024, .cores = 40},
                     Slots(24000, 4096, 30));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("its GPU GPU-gone is not in the node's inventory now"),
            std::string::npos);
}

TEST(ResizeDecision, AShrinkAlwaysFitsAndElasticBurstFollowsCores) {
  // The GPU is over-full (its inventory shrank): a shrink still goes through.
  Result<Allocation> r = ResizeDecision(
      Decision(), {.id = "1", .container = "main", .memory_mib = 1024}, Slots(4000, 9000, 30));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->containers[0].devices[0].memory_mib, 1024u);
  Allocation elastic = Decision();
  elastic.containers[0].mode = ComputeMode::kElastic;
  elastic.containers[0].devices[0].cores_limit = 50;
  r = ResizeDecision(elastic, {.id = "1", .container = "main", .cores = 60},
                     Slots(24000, 4096, 30));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->containers[0].devices[0].cores_limit, 60);
}

TEST(ResizeDecision, RefusesContainersWithoutGpusAndInitContainers) {
  Allocation a = Decision();
  a.containers.push_back(
      {.name = "warmup", .init = true, .devices = {{.uuid = "GPU-a", .memory_mib = 10}}});
  Result<Allocation> r =
      ResizeDecision(a, {.id = "1", .container = "side", .cores = 10}, Slots(24000, 4096, 30));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("holds no GPU in the pod's decision (containers with "
                                      "GPUs: main, warmup)"),
            std::string::npos);
  r = ResizeDecision(a, {.id = "1", .container = "warmup", .cores = 10}, Slots(24000, 4096, 30));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is an init container"), std::string::npos);
}

// The state with node n1 (GPU-a, 24000 MiB) and pod p holding 4096 MiB, 30%.
struct StateFixture {
  ClusterState state{DialectConfig{}};
  StateFixture() {
    EXPECT_TRUE(
        state.OnNode(EventType::kAdded, MakeNode("n1", {testing::Gpu("GPU-a", 0, "L4", 24000)}))
            .ok());
    EXPECT_TRUE(state.OnPod(EventType::kAdded, Pod("p", Decision())).ok());
  }
  GpuSlot Gpu() { return state.Snapshot().nodes["n1"].gpus[0]; }
};

TEST(ResizeState, ChargesTheNewDecisionAndKeepsItAgainstStaleEvents) {
  StateFixture f;
  PodId id{"default", "p", "uid-p"};
  auto grow = [](const Allocation& current, std::span<const GpuSlot> gpus) {
    return ResizeDecision(current, {.id = "1", .container = "main", .memory_mib = 8192}, gpus);
  };
  Result<Allocation> previous = f.state.Resize(id, grow);
  ASSERT_TRUE(previous.ok()) << previous.status().message();
  EXPECT_EQ(previous->containers[0].devices, Decision().containers[0].devices);
  EXPECT_EQ(f.Gpu().used_mib, 8192u);
  // An event from before the patch (a status update) keeps the new charge.
  ASSERT_TRUE(f.state.OnPod(EventType::kModified, Pod("p", Decision())).ok());
  EXPECT_EQ(f.Gpu().used_mib, 8192u);
  // The patch's own event confirms it; a later decision is taken as usual.
  Allocation resized = Decision(8192);
  resized.containers[0].resized = true;
  ASSERT_TRUE(f.state.OnPod(EventType::kModified, Pod("p", resized)).ok());
  EXPECT_EQ(f.Gpu().used_mib, 8192u);
  EXPECT_EQ(f.Gpu().pods, 1);
  ASSERT_TRUE(f.state.OnPod(EventType::kModified, Pod("p", Decision(2048))).ok());
  EXPECT_EQ(f.Gpu().used_mib, 2048u);
}

TEST(ResizeState, CancelGivesBackThePreviousChargeAndRefusalsChangeNothing) {
  StateFixture f;
  PodId id{"default", "p", "uid-p"};
  Result<Allocation> previous = f.state.Resize(id, [](const Allocation& c, auto gpus) {
    return ResizeDecision(c, {.id = "1", .container = "main", .memory_mib = 8192}, gpus);
  });
  ASSERT_TRUE(previous.ok());
  f.state.CancelResize(id, *previous);
  EXPECT_EQ(f.Gpu().used_mib, 4096u);
  EXPECT_EQ(f.state.Snapshot().pods["default/p"].allocation->containers[0].devices,
            Decision().containers[0].devices);
  Result<Allocation> refused = f.state.Resize(id, [](const Allocation& c, auto gpus) {
    return ResizeDecision(c, {.id = "1", .container = "main", .memory_mib = 30000}, gpus);
  });
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(f.Gpu().used_mib, 4096u);
  EXPECT_EQ(f.state
                .Resize({"default", "nope", ""},
                        [](const Allocation& c, auto) { return Result<Allocation>(c); })
                .status()
                .code(),
            StatusCode::kNotFound);
}

// The API as the Resizer sees it: one pod, patched only at its resourceVersion.
class FakeWriter : public ResizeWriter {
 public:
  json pod;
  int patches = 0;
  int conflicts = 0, gets = 0;
  bool conflict_next = false;
  std::function<void()> during_patch;  // what happens elsewhere while the patch is on its way
  std::vector<std::pair<std::string, std::string>> events;  // (name, reason)
  std::vector<std::string> messages;

  Result<json> PatchPod(const PodId&, const std::map<std::string, std::string>& annotations,
                        const std::string& resource_version) override {
    if (during_patch) during_patch();
    if (conflict_next || resource_version != pod["metadata"].value("resourceVersion", "")) {
      conflict_next = false;
      ++conflicts;
      return Status(StatusCode::kConflict, "the object has been modified");
    }
    ++patches;
    for (const auto& [k, v] : annotations) pod["metadata"]["annotations"][k] = v;
    pod["metadata"]["resourceVersion"] =
        std::to_string(std::stoi(pod["metadata"].value("resourceVersion", "0")) + 1);
    return pod;
  }
  Result<json> GetPod(const PodId&) override {
    ++gets;
    return pod;
  }
  Status RecordEvent(const json&, const std::string& name, const std::string&,
                     const std::string& reason, const std::string& message) override {
    for (const auto& e : events) {
      if (e.first == name) return Status::Ok();  // AlreadyExists counts as made
    }
    events.push_back({name, reason});
    messages.push_back(message);
    return Status::Ok();
  }
};

ResizeStatus StatusOf(const json& pod) {
  return *ParseResizeStatus(
      pod["metadata"]["annotations"][annotations::kResizeStatus].get<std::string>());
}

TEST(Resizer, GrantsAGrowthOnceWithTheNewDecisionAndAnEvent) {
  StateFixture f;
  FakeWriter api;
  api.pod = WithRequest(Pod("p", Decision()),
                        {.id = "r1", .container = "main", .memory_mib = 8192, .cores = 40});
  Resizer resizer(f.state, nullptr, api, nullptr);
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  ResizeStatus status = StatusOf(api.pod);
  EXPECT_TRUE(status.granted);
  EXPECT_EQ(status.id, "r1");
  EXPECT_EQ(status.memory_mib, 8192u);
  EXPECT_EQ(status.cores, 40);
  EXPECT_EQ(status.message,
            "container \"main\" resized from 4096 MiB and 30% cores per GPU to 8192 MiB and 40% "
            "cores per GPU on node n1");
  Allocation decided = *ParseAllocation(
      api.pod["metadata"]["annotations"][annotations::kAllocation].get<std::string>());
  EXPECT_EQ(decided.containers[0].devices[0].uuid, "GPU-a");
  EXPECT_EQ(decided.containers[0].devices[0].memory_mib, 8192u);
  EXPECT_EQ(f.Gpu().used_mib, 8192u);
  EXPECT_EQ(f.Gpu().used_cores, 40);
  ASSERT_EQ(api.events.size(), 1u);
  EXPECT_EQ(api.events[0].first, Resizer::EventName("p", "r1"));
  EXPECT_EQ(api.events[0].second, kResizedReason);
  // The pod's next event, and a new Resizer (a restart or another leader): nothing again.
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  Resizer after_restart(f.state, nullptr, api, nullptr);
  ASSERT_TRUE(after_restart.Process(api.pod).ok());
  EXPECT_EQ(api.patches, 1);
  EXPECT_EQ(api.events.size(), 1u);
  EXPECT_EQ(f.Gpu().used_mib, 8192u);
}

TEST(Resizer, AReplicaThatNoLongerLeadsWritesNothingAndGivesTheChargeBack) {
  StateFixture f;
  FakeWriter api;
  api.pod = WithRequest(Pod("p", Decision()),
                        {.id = "r1", .container = "main", .memory_mib = 8192, .cores = 40});
  Leadership leadership(true);  // elected, not leading (any more)
  Resizer resizer(f.state, nullptr, api, &leadership);
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  EXPECT_EQ(api.patches, 0);
  EXPECT_TRUE(api.events.empty());
  EXPECT_EQ(f.Gpu().used_mib, 4096u);
  EXPECT_EQ(f.Gpu().used_cores, 30);
  leadership.Lead();
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  EXPECT_EQ(api.patches, 1);
  EXPECT_EQ(f.Gpu().used_mib, 8192u);
}

TEST(Resizer, ARefusalSaysWhyKeepsTheChargeAndIsAWarningEvent) {
  StateFixture f;
  // Another pod holds 18000 MiB of the GPU.
  ASSERT_TRUE(f.state.OnPod(EventType::kAdded, Pod("other", Decision(18000, 10))).ok());
  FakeWriter api;
  api.pod =
      WithRequest(Pod("p", Decision()), {.id = "r2", .container = "main", .memory_mib = 8192});
  Resizer resizer(f.state, nullptr, api, nullptr);
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  ResizeStatus status = StatusOf(api.pod);
  EXPECT_FALSE(status.granted);
  EXPECT_EQ(status.memory_mib, 4096u);
  EXPECT_EQ(status.message,
            "container \"main\": insufficient GPU memory: need 8192 MiB on 1 GPU, largest free "
            "6000 MiB (GPU 0, L4)");
  EXPECT_EQ(api.pod["metadata"]["annotations"][annotations::kAllocation].get<std::string>(),
            AllocationToJson(Decision()));
  EXPECT_EQ(f.Gpu().used_mib, 22096u);
  ASSERT_EQ(api.events.size(), 1u);
  EXPECT_EQ(api.events[0].second, kResizeRefusedReason);
  EXPECT_NE(api.messages[0].find("insufficient GPU memory"), std::string::npos);
}

TEST(Resizer, AConflictUndoesTheChargeAndTheNextEventAnswers) {
  StateFixture f;
  FakeWriter api;
  api.pod =
      WithRequest(Pod("p", Decision()), {.id = "r3", .container = "main", .memory_mib = 8192});
  api.conflict_next = true;
  Resizer resizer(f.state, nullptr, api, nullptr);
  Status s = resizer.Process(api.pod);
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_EQ(f.Gpu().used_mib, 4096u);
  EXPECT_TRUE(api.events.empty());
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  EXPECT_TRUE(StatusOf(api.pod).granted);
  EXPECT_EQ(f.Gpu().used_mib, 8192u);
  EXPECT_EQ(api.patches, 1);
}

// Waits (2 s at most) until GPU-a holds `mib`, for the worker thread.
bool WaitForUsed(StateFixture& f, uint64_t mib) {
  for (int i = 0; i < 200 && f.Gpu().used_mib != mib; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return f.Gpu().used_mib == mib;
}

TEST(Resizer, TheWorkerAnswersAStaleCopyFromThePodReadAgain) {
  // A LIST from before the latest event (the API holds resourceVersion 2) with no event to come.
  StateFixture f;
  FakeWriter api;
  api.pod =
      WithRequest(Pod("p", Decision()), {.id = "r3", .container = "main", .memory_mib = 8192});
  json stale = api.pod;
  api.pod["metadata"]["resourceVersion"] = "2";
  Resizer resizer(f.state, nullptr, api, nullptr);
  resizer.Start();
  resizer.OnPod(EventType::kModified, stale);
  EXPECT_TRUE(WaitForUsed(f, 8192));
  resizer.Stop();
  EXPECT_EQ(api.conflicts, 1);
  EXPECT_EQ(api.gets, 1);
  EXPECT_EQ(api.patches, 1);
  EXPECT_TRUE(StatusOf(api.pod).granted);
}

TEST(Resizer, AnOlderCopyNeverReplacesAQueuedPod) {
  StateFixture f;
  FakeWriter api;
  api.pod =
      WithRequest(Pod("p", Decision()), {.id = "r3", .container = "main", .memory_mib = 8192});
  json older = api.pod;
  api.pod["metadata"]["resourceVersion"] = "12";  // numbers, not text: "12" is newer than "9"
  older["metadata"]["resourceVersion"] = "9";
  Resizer resizer(f.state, nullptr, api, nullptr);
  resizer.OnPod(EventType::kModified, api.pod);
  resizer.OnPod(EventType::kModified, older);  // the LIST made when leading started
  resizer.Start();
  EXPECT_TRUE(WaitForUsed(f, 8192));
  resizer.Stop();
  EXPECT_EQ(api.conflicts, 0);
  EXPECT_EQ(api.patches, 1);
}

// An Event's name is a DNS subdomain of at most 253 characters whatever the pod's name.
TEST(Resizer, EventNamesFitKubernetesLimitForTheLongestPodNames) {
  const std::string short_name = Resizer::EventName("p", "r1");
  EXPECT_EQ(short_name.rfind("p.tessera-resize-", 0), 0u) << short_name;
  const std::string longest = Resizer::EventName(std::string(253, 'a'), "r1");
  EXPECT_EQ(longest.size(), 253u);
  EXPECT_EQ(longest.substr(longest.size() - short_name.size() + 1), short_name.substr(1));
  // A cut that would end at a '-' or '.' drops it.
  const std::string dashed =
      Resizer::EventName(std::string(220, 'a') + "-b" + std::string(31, 'c'), "r1");
  EXPECT_LE(dashed.size(), 253u);
  EXPECT_EQ(dashed.find("-.tessera-resize-"), std::string::npos) << dashed;
  EXPECT_EQ(dashed.rfind(std::string(220, 'a') + ".tessera-resize-", 0), 0u) << dashed;
}

TEST(Resizer, AReplicaThatTakesOverMakesTheMissingEventOfARecentAnswerOnly) {
  StateFixture f;
  FakeWriter api;
  api.pod = WithRequest(Pod("p", Decision()), {.id = "r4", .container = "main", .cores = 20});
  Resizer first(f.state, nullptr, api, nullptr);
  ASSERT_TRUE(first.Process(api.pod).ok());
  api.events.clear();  // the first leader crashed before its Event
  Resizer second(f.state, nullptr, api, nullptr);
  ASSERT_TRUE(second.Process(api.pod).ok());
  ASSERT_EQ(api.events.size(), 1u);
  EXPECT_EQ(api.events[0].first, Resizer::EventName("p", "r4"));
  EXPECT_EQ(api.patches, 1);
  // An answer older than the window gets no Event from a new replica.
  api.events.clear();
  ResizeStatus old = StatusOf(api.pod);
  old.time = "2020-01-01T00:00:00Z";
  api.pod["metadata"]["annotations"][annotations::kResizeStatus] = ResizeStatusToJson(old);
  Resizer third(f.state, nullptr, api, nullptr);
  ASSERT_TRUE(third.Process(api.pod).ok());
  EXPECT_TRUE(api.events.empty());
}

TEST(Resizer, TheQuotaIsCheckedAtResizeWithUsedAskedAndLeft) {
  StateFixture f;
  QuotaLedger ledger{DialectConfig{}};
  ledger.OnNode(EventType::kAdded, MakeNode("n1", {testing::Gpu("GPU-a", 0, "L4", 24000)}));
  ledger.OnQuota(EventType::kAdded,
                 {{"metadata", {{"name", "gpu-quota"}, {"namespace", "default"}}},
                  {"spec", {{"hard", {{"requests.tessera.io/gpu-memory", "6Gi"}}}}}});
  FakeWriter api;
  api.pod =
      WithRequest(Pod("p", Decision()), {.id = "r5", .container = "main", .memory_mib = 8192});
  ledger.OnPod(EventType::kAdded, api.pod);
  EXPECT_EQ(ledger.Used("default").memory_bytes, int64_t{4} << 30);
  Resizer resizer(f.state, &ledger, api, nullptr);
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  ResizeStatus status = StatusOf(api.pod);
  EXPECT_FALSE(status.granted);
  EXPECT_EQ(status.message,
            "namespace default: GPU memory quota 6 GiB (ResourceQuota gpu-quota): 4 GiB used, 4 "
            "GiB asked (container \"main\" of pod default/p from 4096 MiB and 30% cores per GPU "
            "to 8192 MiB and 30% cores per GPU), 2 GiB left");
  EXPECT_EQ(f.Gpu().used_mib, 4096u);
  // Within the quota it is granted, and the ledger counts the new size from the decision.
  api.pod = WithRequest(api.pod, {.id = "r6", .container = "main", .memory_mib = 6144});
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  EXPECT_TRUE(StatusOf(api.pod).granted);
  EXPECT_EQ(ledger.Used("default").memory_bytes, int64_t{6} << 30);
  // A ledger rebuilt from the pod (a restart) counts the same.
  QuotaLedger rebuilt{DialectConfig{}};
  rebuilt.OnPod(EventType::kAdded, api.pod);
  EXPECT_EQ(rebuilt.Used("default").memory_bytes, int64_t{6} << 30);
}

TEST(Resizer, AGrowthCountsAgainstTheQuotaFromTheDecisionUntilThePodShowsIt) {
  StateFixture f;
  QuotaLedger ledger{DialectConfig{}};
  ledger.OnNode(EventType::kAdded, MakeNode("n1", {testing::Gpu("GPU-a", 0, "L4", 24000)}));
  ledger.OnQuota(EventType::kAdded,
                 {{"metadata", {{"name", "gpu-quota"}, {"namespace", "default"}}},
                  {"spec", {{"hard", {{"requests.tessera.io/gpu-memory", "8Gi"}}}}}});
  FakeWriter api;
  api.pod = Pod("p", Decision());
  const json before = api.pod;
  ledger.OnPod(EventType::kAdded, api.pod);
  Resizer resizer(f.state, &ledger, api, nullptr);
  // While the answer is written, a pod created in the namespace sees the growth.
  PodAsk four_gib{.app = {.memory_bytes = int64_t{4} << 30}};
  std::string refused_meanwhile;
  api.during_patch = [&] {
    refused_meanwhile = ledger.Admit("default", "uid-q", four_gib, "pod default/q", false);
  };
  api.pod = WithRequest(api.pod, {.id = "r1", .container = "main", .memory_mib = 6144});
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  EXPECT_TRUE(StatusOf(api.pod).granted);
  EXPECT_NE(refused_meanwhile.find("6 GiB used"), std::string::npos) << refused_meanwhile;
  EXPECT_EQ(ledger.Used("default").memory_bytes, int64_t{6} << 30);
  // An event from before the patch does not drop it; the patched pod's event counts it instead.
  ledger.OnPod(EventType::kModified, before);
  EXPECT_EQ(ledger.Used("default").memory_bytes, int64_t{6} << 30);
  ledger.OnPod(EventType::kModified, api.pod);
  EXPECT_EQ(ledger.Used("default").memory_bytes, int64_t{6} << 30);
  // A growth whose patch fails counts no more.
  api.during_patch = nullptr;
  api.conflict_next = true;
  api.pod = WithRequest(api.pod, {.id = "r2", .container = "main", .memory_mib = 7168});
  EXPECT_EQ(resizer.Process(api.pod).code(), StatusCode::kConflict);
  EXPECT_EQ(ledger.Used("default").memory_bytes, int64_t{6} << 30);
}

TEST(Resizer, APodDeletedWhileItsAnswerIsWrittenIsNotChargedAgain) {
  StateFixture f;
  QuotaLedger ledger{DialectConfig{}};
  ledger.OnQuota(EventType::kAdded,
                 {{"metadata", {{"name", "gpu-quota"}, {"namespace", "default"}}},
                  {"spec", {{"hard", {{"requests.tessera.io/gpu-memory", "20Gi"}}}}}});
  FakeWriter api;
  api.pod =
      WithRequest(Pod("p", Decision()), {.id = "r1", .container = "main", .memory_mib = 6144});
  ledger.OnPod(EventType::kAdded, api.pod);
  Resizer resizer(f.state, &ledger, api, nullptr);
  // The watch delivers the pod's deletion before the patch's response comes back.
  api.during_patch = [&] {
    ASSERT_TRUE(f.state.OnPod(EventType::kDeleted, api.pod).ok());
    ledger.OnPod(EventType::kDeleted, api.pod);
  };
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  EXPECT_EQ(f.Gpu().used_mib, 0u);
  EXPECT_EQ(f.Gpu().used_cores, 0);
  EXPECT_EQ(ledger.Used("default").memory_bytes, 0);
}

TEST(Resizer, APodWhoseRequestCannotBeCountedIsRefusedWhereQuotasApply) {
  StateFixture f;
  QuotaLedger ledger{DialectConfig{}};
  FakeWriter api;
  json pod = Pod("p", Decision());
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"] = "lots";
  api.pod = WithRequest(pod, {.id = "r1", .container = "main", .memory_mib = 6144});
  Resizer resizer(f.state, &ledger, api, nullptr);
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  ResizeStatus status = StatusOf(api.pod);
  EXPECT_FALSE(status.granted);
  EXPECT_EQ(status.message.rfind("the pod's GPU request cannot be counted against the "
                                 "namespace's quotas: ",
                                 0),
            0u)
      << status.message;
  EXPECT_EQ(f.Gpu().used_mib, 4096u);
}

TEST(Resizer, ASignedStateSignsTheNewDecisionAndRefusesOneThatDoesNotVerify) {
  Result<annotations::KeyRing> keys =
      annotations::KeyRing::Parse("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n", "test");
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  annotations::Signing signing(*keys);
  ClusterState state(DialectConfig{}, signing);
  json node = MakeNode("n1", {testing::Gpu("GPU-a", 0, "L4", 24000)});
  const std::string inventory = node["metadata"]["annotations"][annotations::kGpus];
  for (auto& [k, v] : signing.Signed(annotations::kGpus, "", inventory)) {
    node["metadata"]["annotations"][k] = v;
  }
  ASSERT_TRUE(state.OnNode(EventType::kAdded, node).ok());
  json pod = Pod("p", Decision());
  for (auto& [k, v] :
       signing.Signed(annotations::kAllocation, "uid-p", AllocationToJson(Decision()))) {
    pod["metadata"]["annotations"][k] = v;
  }
  ASSERT_TRUE(state.OnPod(EventType::kAdded, pod).ok());
  FakeWriter api;
  api.pod = WithRequest(pod, {.id = "r7", .container = "main", .memory_mib = 8192});
  Resizer resizer(state, nullptr, api, nullptr);
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  EXPECT_TRUE(StatusOf(api.pod).granted);
  EXPECT_TRUE(signing.Check(api.pod, annotations::kAllocation, "pod default/p").ok());

  // A pod whose decision carries no signature is charged as read, but not resized.
  json forged = Pod("q", Decision(1000));
  ASSERT_TRUE(state.OnPod(EventType::kAdded, forged).ok());
  api.pod = WithRequest(forged, {.id = "r8", .container = "main", .memory_mib = 2000});
  ASSERT_TRUE(resizer.Process(api.pod).ok());
  EXPECT_FALSE(StatusOf(api.pod).granted);
  EXPECT_NE(StatusOf(api.pod).message.find("does not verify"), std::string::npos);
}

TEST(ResizeAdmission, ChecksTheRequestWhenItIsSetOrChanged) {
  json pod = Pod("p", Decision());
  auto update = [&](const std::string& value) {
    json next = pod;
    next["metadata"]["annotations"][annotations::kResize] = value;
    return ResizeRequestDenial("UPDATE", next, &pod);
  };
  EXPECT_EQ(update(R"({"version":1,"id":"a","container":"main","memoryMiB":8192})"), "");
  EXPECT_NE(update(R"({"version":1,"id":"a","container":"main","cores":150})")
                .find("\"cores\" 150 is not allowed"),
            std::string::npos);
  EXPECT_EQ(update(R"({"version":1,"id":"a","container":"side","cores":10})"),
            "tessera.io/resize: container \"side\" of pod default/p holds no GPU (containers that "
            "do: main)");
  // An id answered already would never be answered again.
  pod["metadata"]["annotations"][annotations::kResizeStatus] =
      ResizeStatusToJson({.id = "a", .container = "main", .granted = true});
  EXPECT_NE(update(R"({"version":1,"id":"a","container":"main","cores":10})")
                .find("was answered already"),
            std::string::npos);
  // Unchanged (another update of the pod) or removed: not looked at.
  json same = WithRequest(pod, {.id = "a", .container = "main", .cores = 500});
  EXPECT_EQ(ResizeRequestDenial("UPDATE", same, &same), "");
  // No decision (a DRA pod, or one not placed yet); a new pod.
  json bare = MakePod("d", {{"nvidia.com/gpu", 1}});
  json asked = WithRequest(bare, {.id = "a", .container = "main", .cores = 10});
  EXPECT_NE(ResizeRequestDenial("UPDATE", asked, &bare).find("has no Tessera decision"),
            std::string::npos);
  EXPECT_NE(ResizeRequestDenial("CREATE", asked, nullptr).find("a new pod may not carry"),
            std::string::npos);
}

TEST(ResizeAdmission, OnlyTesserasAccountsWriteTheAnswer) {
  AnnotationGuard guard(DefaultTrustedUsers());
  json pod = Pod("p", Decision());
  json answered = pod;
  answered["metadata"]["annotations"][annotations::kResizeStatus] =
      ResizeStatusToJson({.id = "a", .container = "main", .granted = true});
  EXPECT_EQ(guard.Check("UPDATE", answered, &pod, "alice"),
            "user \"alice\" may not set tessera.io/resize-status: only Tessera's service accounts "
            "(scheduler.webhook.trusted-users) write it");
  EXPECT_EQ(guard.Check("UPDATE", answered, &pod, DefaultTrustedUsers()[0]), "");
  // The request itself is the user's to set.
  json asked = WithRequest(pod, {.id = "b", .container = "main", .cores = 10});
  EXPECT_EQ(guard.Check("UPDATE", asked, &pod, "alice"), "");
}

}  // namespace
}  // namespace tessera::scheduler
