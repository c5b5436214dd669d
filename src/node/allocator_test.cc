#include "node/allocator.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/allocation_files.h"
#include "node/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace tessera::node::testing;

const std::string kNode = "node-1";
const ResourceSpec kGpu{"nvidia.com/gpu", ResourceKind::kVgpuSlots, ""};
const ResourceSpec kCore{"tencent.com/vcuda-core", ResourceKind::kVcudaCore, ""};
const ResourceSpec kMem{"tencent.com/vcuda-memory", ResourceKind::kVcudaMemory,
                        "tencent.com/vcuda-core"};

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class AllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opts_.node_name = kNode;
    opts_.state_dir = dir_.path() + "/state";
    opts_.cdi_dir = dir_.path() + "/cdi";
    allocator_ = std::make_unique<Allocator>(opts_, std::vector<ResourceSpec>{kGpu, kCore, kMem},
                                             store_, store_, kubelet_);
    ASSERT_TRUE(allocator_->Init().ok());
    allocator_->SetGpus(TestGpus(4));
  }
  std::string Limits(const std::string& id) {
    return Read(allocator_->AllocationDir(id) + "/limits");
  }

  TempDir dir_;
  AllocatorOptions opts_;
  MemoryPodStore store_{kNode};
  FakePodResourcesList kubelet_;
  std::unique_ptr<Allocator> allocator_;
};

TEST_F(AllocatorTest, AllocateWritesTheLikeliestPodsDecision) {
  store_.Put(MakePod("a", kNode, "nvidia.com/gpu", 1, {{"GPU-2", 4096, 30}}));
  auto answer = allocator_->Allocate("nvidia.com/gpu", {"0-3"});
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->cdi_device, "tessera.io/container=" + answer->allocation_id);
  ASSERT_EQ(answer->mounts.size(), 4u);
  EXPECT_EQ(answer->mounts[0].container_path, "/var/run/tessera");
  EXPECT_TRUE(answer->mounts[0].read_only);
  EXPECT_EQ(answer->mounts[2].container_path, "/etc/ld.so.preload");
  EXPECT_FALSE(answer->mounts[3].read_only);
  EXPECT_THAT(Limits(answer->allocation_id), HasSubstr("uuid.0=GPU-2\nmemory.0=4294967296\n"));
  EXPECT_THAT(Read(allocator_->CdiSpecPath(answer->allocation_id)), HasSubstr("/dev/nvidia2"));
  EXPECT_EQ(Read(opts_.state_dir + "/ld.so.preload"),
            "/usr/local/lib/tessera/libtessera-cuda.so\n");
}

TEST_F(AllocatorTest, AllocateWithoutCandidateGivesNoGpu) {
  auto answer = allocator_->Allocate("nvidia.com/gpu", {"0-3"});
  ASSERT_TRUE(answer.ok());
  EXPECT_THAT(Limits(answer->allocation_id), HasSubstr("devices=0\n"));
  EXPECT_THAT(Read(allocator_->CdiSpecPath(answer->allocation_id)), Not(HasSubstr("/dev/nvidia")));
}

TEST_F(AllocatorTest, AllocateWaitsForItsPodToReachTheCache) {
  // kubelet calls Allocate as soon as it admits the pod; the agent's watch may still lag.
  opts_.owner_wait = std::chrono::seconds(5);
  Allocator allocator(opts_, {kGpu, kCore, kMem}, store_, store_, kubelet_);
  ASSERT_TRUE(allocator.Init().ok());
  allocator.SetGpus(TestGpus(4));
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    store_.Put(MakePod("a", kNode, "nvidia.com/gpu", 1, {{"GPU-2", 4096, 30}}));
  });
  auto answer = allocator.Allocate("nvidia.com/gpu", {"0-3"});
  late.join();
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  std::string limits = Read(allocator.AllocationDir(answer->allocation_id) + "/limits");
  EXPECT_THAT(limits, HasSubstr("uuid.0=GPU-2\nmemory.0=4294967296\ncores.0=30\n"));
}

TEST_F(AllocatorTest, PreStartRewritesWhenTheGuessWasWrong) {
  // Two pods ask for one slot; kubelet allocates b's first, but a is older (the likelier guess).
  auto a = MakePod("a", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 1000, 10}});
  auto b = MakePod("b", kNode, "nvidia.com/gpu", 1, {{"GPU-3", 2000, 20}});
  b["metadata"]["creationTimestamp"] = "2026-11-29T11:00:00Z";
  store_.Put(a);
  store_.Put(b);
  auto answer = allocator_->Allocate("nvidia.com/gpu", {"2-0"});
  ASSERT_TRUE(answer.ok());
  EXPECT_THAT(Limits(answer->allocation_id), HasSubstr("uuid.0=GPU-1\n"));
  kubelet_.Add({"default", "b", "main", "nvidia.com/gpu", {"2-0"}});
  ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"2-0"}).ok());
  EXPECT_THAT(Limits(answer->allocation_id), HasSubstr("uuid.0=GPU-3\nmemory.0=2097152000\n"));
  EXPECT_THAT(Read(allocator_->CdiSpecPath(answer->allocation_id)), HasSubstr("/dev/nvidia3"));
  auto pod = store_.Pod("default", "b");
  EXPECT_THAT(PodAnnotation(*pod, kAllocatedAnnotation), HasSubstr(answer->allocation_id));
  // a is free again for the next Allocate.
  auto second = allocator_->Allocate("nvidia.com/gpu", {"0-0"});
  ASSERT_TRUE(second.ok());
  EXPECT_THAT(Limits(second->allocation_id), HasSubstr("uuid.0=GPU-1\n"));
}

TEST_F(AllocatorTest, PodWithoutDecisionGetsWholeGpusOfTheIds) {
  store_.Put(MakePod("plain", kNode, "nvidia.com/gpu", 2));
  auto answer = allocator_->Allocate("nvidia.com/gpu", {"3-1", "1-0"});
  ASSERT_TRUE(answer.ok());
  kubelet_.Add({"default", "plain", "main", "nvidia.com/gpu", {"1-0", "3-1"}});
  ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"1-0", "3-1"}).ok());
  std::string limits = Limits(answer->allocation_id);
  EXPECT_THAT(limits, HasSubstr("devices=2\nuuid.0=GPU-1\nmemory.0=0\ncores.0=0\nuuid.1=GPU-3\n"));
}

TEST_F(AllocatorTest, ImpossibleDecisionFailsWithNamedErrorAndMarksPod) {
  store_.Put(MakePod("bad", kNode, "nvidia.com/gpu", 1, {{"GPU-9", 1000, 10}}));
  ASSERT_TRUE(allocator_->Allocate("nvidia.com/gpu", {"0-0"}).ok());
  kubelet_.Add({"default", "bad", "main", "nvidia.com/gpu", {"0-0"}});
  Status s = allocator_->PreStart("nvidia.com/gpu", {"0-0"});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("pod default/bad container main"));
  EXPECT_THAT(s.message(), HasSubstr("GPU-9 is not on this node"));
  EXPECT_THAT(PodAnnotation(*store_.Pod("default", "bad"), kAllocationFailedAnnotation),
              HasSubstr("GPU-9"));
}

TEST_F(AllocatorTest, TooMuchMemoryIsImpossible) {
  store_.Put(MakePod("big", kNode, "nvidia.com/gpu", 1, {{"GPU-0", 999999, 10}}));
  kubelet_.Add({"default", "big", "main", "nvidia.com/gpu", {"0-0"}});
  Status s = allocator_->PreStart("nvidia.com/gpu", {"0-0"});
  EXPECT_THAT(s.message(), HasSubstr("has 81920 MiB, the decision gives 999999 MiB"));
}

TEST_F(AllocatorTest, PreStartFallsBackToTheGuessWhenKubeletCannotTell) {
  store_.Put(MakePod("a", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 1000, 10}}));
  ASSERT_TRUE(allocator_->Allocate("nvidia.com/gpu", {"0-0"}).ok());
  kubelet_.Fail(true);
  ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"0-0"}).ok());
  EXPECT_THAT(PodAnnotation(*store_.Pod("default", "a"), kAllocatedAnnotation), HasSubstr("GPU-1"));
}

TEST_F(AllocatorTest, PreStartWithNoOwnerAtAllFails) {
  Status s = allocator_->PreStart("nvidia.com/gpu", {"0-0"});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("no pod owns nvidia.com/gpu devices 0-0"));
  EXPECT_EQ(allocator_->PreStart("example.com/x", {"0-0"}).code(), StatusCode::kInvalidArgument);
}

TEST_F(AllocatorTest, VcudaMemoryOnlyCountsNextToVcudaCore) {
  auto pod = MakePod("v", kNode, "tencent.com/vcuda-core", 30, {{"GPU-0", 1024, 30}});
  pod["spec"]["containers"][0]["resources"]["limits"]["tencent.com/vcuda-memory"] = "4";
  store_.Put(pod);
  auto mem = allocator_->Allocate("tencent.com/vcuda-memory", {"0-0", "0-1", "0-2", "0-3"});
  ASSERT_TRUE(mem.ok());
  EXPECT_TRUE(mem->mounts.empty());
  EXPECT_TRUE(mem->cdi_device.empty());
  std::vector<std::string> core_ids;
  for (int i = 0; i < 30; ++i) core_ids.push_back("0-" + std::to_string(i));
  auto core = allocator_->Allocate("tencent.com/vcuda-core", core_ids);
  ASSERT_TRUE(core.ok());
  EXPECT_FALSE(core->cdi_device.empty());
  kubelet_.Add({"default", "v", "main", "tencent.com/vcuda-core", core_ids});
  kubelet_.Add({"default", "v", "main", "tencent.com/vcuda-memory", {"0-0", "0-1", "0-2", "0-3"}});
  EXPECT_TRUE(allocator_->PreStart("tencent.com/vcuda-memory", {"0-3", "0-2", "0-1", "0-0"}).ok());
  EXPECT_TRUE(allocator_->PreStart("tencent.com/vcuda-core", core_ids).ok());
  EXPECT_THAT(Limits(core->allocation_id), HasSubstr("memory.0=1073741824\ncores.0=30\n"));
}

TEST_F(AllocatorTest, PreferredFollowsTheDecisionThenSpreadsSlots) {
  store_.Put(MakePod("a", kNode, "nvidia.com/gpu", 2, {{"GPU-2", 1, 1}, {"GPU-3", 1, 1}}));
  std::vector<std::string> available;
  for (int g = 0; g < 4; ++g) {
    for (int s = 0; s < 3; ++s) available.push_back(std::to_string(g) + "-" + std::to_string(s));
  }
  EXPECT_EQ(allocator_->Preferred("nvidia.com/gpu", available, {}, 2),
            (std::vector<std::string>{"2-0", "3-0"}));
  // No pending pod: distinct GPUs for slots.
  store_.Remove("default", "a");
  auto ids = allocator_->Preferred("nvidia.com/gpu", available, {"1-2"}, 3);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], "1-2");
  std::set<int> gpus;
  for (const auto& id : ids) gpus.insert(*GpuIndexOfDevice(id));
  EXPECT_EQ(gpus.size(), 3u);
}

TEST_F(AllocatorTest, PreferredPacksCoresOnTheDecidedGpu) {
  store_.Put(MakePod("c", kNode, "tencent.com/vcuda-core", 3, {{"GPU-1", 0, 3}}));
  std::vector<std::string> available = {"0-0", "0-1", "1-0", "1-1", "1-2", "1-3"};
  EXPECT_EQ(allocator_->Preferred("tencent.com/vcuda-core", available, {}, 3),
            (std::vector<std::string>{"1-0", "1-1", "1-2"}));
}

TEST_F(AllocatorTest, FinishedAndAllocatedPodsAreNoCandidates) {
  auto done = MakePod("done", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 1, 1}});
  done["status"]["phase"] = "Succeeded";
  auto had = MakePod("had", kNode, "nvidia.com/gpu", 1, {{"GPU-2", 1, 1}});
  had["metadata"]["annotations"][kAllocatedAnnotation] = R"({"main":{"allocation":"x"}})";
  auto other = MakePod("other", "node-2", "nvidia.com/gpu", 1, {{"GPU-3", 1, 1}});
  store_.Put(done);
  store_.Put(had);
  store_.Put(other);
  auto answer = allocator_->Allocate("nvidia.com/gpu", {"0-0"});
  ASSERT_TRUE(answer.ok());
  EXPECT_THAT(Limits(answer->allocation_id), HasSubstr("devices=0\n"));
}

TEST_F(AllocatorTest, AGuessedContainerIsTakenUntilItsGuessIsReplacedOrForgotten) {
  store_.Put(MakePod("a", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 1000, 10}}));
  auto gpu_of = [&](const std::vector<std::string>& ids) {
    auto answer = allocator_->Allocate("nvidia.com/gpu", ids);
    EXPECT_TRUE(answer.ok());
    return Limits(answer->allocation_id).find("uuid.0=GPU-1\n") != std::string::npos;
  };
  EXPECT_TRUE(gpu_of({"0-0"}));
  EXPECT_FALSE(gpu_of({"0-1"}));  // "a" is taken by the guess of 0-0
  // A new Allocate of 0-0 replaces its guess ("a" is still taken then, so it guesses nobody)...
  EXPECT_FALSE(gpu_of({"0-0"}));
  // ... which frees "a".
  EXPECT_TRUE(gpu_of({"0-2"}));
  // Forgetting an allocation frees its container too.
  allocator_->Forget(AllocationId("nvidia.com/gpu", {"0-2"}));
  EXPECT_TRUE(gpu_of({"0-3"}));
}

// The pod cache lags behind the API server: containers of one pod start one after the other
// before the watch brings back the first one's tessera.io/allocated. No record may be lost.
TEST(AllocatorRecordTest, ContainersStartingBeforeTheCacheCatchesUpKeepEachOthersRecord) {
  TempDir dir;
  AllocatorOptions opts;
  opts.node_name = kNode;
  opts.state_dir = dir.path() + "/state";
  opts.cdi_dir = dir.path() + "/cdi";
  MemoryPodStore cache{kNode};  // what the agent's informer shows: never updated here
  MemoryPodStore api{kNode};    // what the API server holds
  FakePodResourcesList kubelet;
  Allocator allocator(opts, {kGpu}, cache, api, kubelet);
  ASSERT_TRUE(allocator.Init().ok());
  allocator.SetGpus(TestGpus(4));

  json pod = MakePod("two", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 1000, 10}}, "first");
  json second = pod["spec"]["containers"][0];
  second["name"] = "second";
  pod["spec"]["containers"].push_back(second);
  json decision = json::parse(PodAnnotation(pod, "tessera.io/allocation"));
  json entry = decision["containers"][0];
  entry["name"] = "second";
  entry["devices"][0]["uuid"] = "GPU-2";
  decision["containers"].push_back(entry);
  pod["metadata"]["annotations"]["tessera.io/allocation"] = decision.dump();
  cache.Put(pod);
  api.Put(pod);

  std::vector<std::string> ids[] = {{"1-0"}, {"2-0"}};
  const char* containers[] = {"first", "second"};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(allocator.Allocate("nvidia.com/gpu", ids[i]).ok());
    kubelet.Add({"default", "two", containers[i], "nvidia.com/gpu", ids[i]});
    ASSERT_TRUE(allocator.PreStart("nvidia.com/gpu", ids[i]).ok());
  }
  json recorded = json::parse(PodAnnotation(*api.Pod("default", "two"), kAllocatedAnnotation));
  EXPECT_TRUE(recorded.contains("first")) << recorded.dump();
  EXPECT_TRUE(recorded.contains("second")) << recorded.dump();

  // Once the cache shows the record, it is the base again: a third write keeps both.
  cache.Put(*api.Pod("default", "two"));
  ASSERT_TRUE(allocator.PreStart("nvidia.com/gpu", ids[0]).ok());
  recorded = json::parse(PodAnnotation(*api.Pod("default", "two"), kAllocatedAnnotation));
  EXPECT_EQ(recorded.size(), 2u) << recorded.dump();
}

TEST(GrantTest, ParsesAndRejects) {
  std::string ann =
      R"({"version":1,"node":"n","containers":[{"name":"c","mode":"elastic","devices":[{"uuid":"GPU-1","memoryMiB":10,"cores":5}]}]})";
  auto g = GrantFromAllocation(ann, "c", "n");
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(g->has_value());
  EXPECT_EQ((*g)->mode, "elastic");
  EXPECT_EQ((*g)->devices[0].memory_mib, 10u);
  EXPECT_FALSE(GrantFromAllocation(ann, "other", "n")->has_value());
  EXPECT_THAT(GrantFromAllocation(ann, "c", "m").status().message(), HasSubstr("for node n"));
  EXPECT_FALSE(GrantFromAllocation("{", "c", "n").ok());
  EXPECT_FALSE(GrantFromAllocation(R"({"version":2,"containers":[]})", "c", "n").ok());
}

}  // namespace
}  // namespace tessera::node
