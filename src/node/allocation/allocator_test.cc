#include "node/allocation/allocator.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/allocation/allocation_files.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace tessera::node::testing;

const std::string kNode = "node-1";
const ResourceSpec kGpu{"nvidia.com/gpu", ResourceKind::kVgpuSlots};
const ResourceSpec kCore{"tencent.com/vcuda-core", ResourceKind::kVcudaCore};
const ResourceSpec kMem{"tencent.com/vcuda-memory", ResourceKind::kVcudaMemory};

class AllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opts_.node_name = kNode;
    opts_.state_dir = dir_.path() + "/state";
    opts_.cdi_dir = dir_.path() + "/cdi";
    allocator_ = std::make_unique<Allocator>(opts_, std::vector<ResourceSpec>{kGpu, kCore, kMem},
                                             store_, recorder_, kubelet_);
    ASSERT_TRUE(allocator_->Init().ok());
    allocator_->SetGpus(TestGpus(4));
  }
  std::string Limits(const std::string& id) {
    return Read(allocator_->AllocationDir(id) + "/limits");
  }
  // kubelet's part: Allocate, then the checkpoint entry of `container` of pod `pod`.
  std::string Admit(const std::string& pod, const std::string& container,
                    const std::string& resource, const std::vector<std::string>& ids) {
    auto answer = allocator_->Allocate(resource, ids);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    if (!answer.ok()) return "";
    kubelet_.Add("uid-" + pod, container, resource, ids, answer->allocation_id);
    return answer->allocation_id;
  }
  std::string Annotation(const std::string& pod, const std::string& key) {
    EXPECT_TRUE(recorder_.Flush());
    return PodAnnotation(*store_.Pod("default", pod), key);
  }

  TempDir dir_;
  AllocatorOptions opts_;
  MemoryPodStore store_{kNode};
  AllocationRecorder recorder_{store_, store_};
  FakeDeviceAssignments kubelet_;
  std::unique_ptr<Allocator> allocator_;
};

TEST_F(AllocatorTest, AllocateAnswersMountsOfANewAllocationWithoutAGpuYet) {
  store_.Put(MakePod("a", kNode, "nvidia.com/gpu", 1, {{"GPU-2", 4096, 30}}));
  auto answer = allocator_->Allocate("nvidia.com/gpu", {"0-3"});
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->cdi_device, "tessera.io/container=" + answer->allocation_id);
  ASSERT_EQ(answer->mounts.size(), 4u);
  EXPECT_EQ(answer->mounts[0].container_path, "/var/run/tessera");
  EXPECT_EQ(answer->mounts[0].host_path, allocator_->AllocationDir(answer->allocation_id));
  EXPECT_TRUE(answer->mounts[0].read_only);
  EXPECT_EQ(answer->mounts[2].container_path, "/etc/ld.so.preload");
  EXPECT_FALSE(answer->mounts[3].read_only);
  EXPECT_TRUE(answer->devices.empty());
  EXPECT_THAT(Limits(answer->allocation_id), HasSubstr("devices=0\n"));
  EXPECT_THAT(Read(allocator_->CdiSpecPath(answer->allocation_id)), Not(HasSubstr("/dev/nvidia")));
  EXPECT_EQ(Read(opts_.state_dir + "/ld.so.preload"),
            "/usr/local/lib/tessera/libtessera-cuda.so\n");
  // Every call is an allocation of its own, even with the same device IDs (kubelet hands an init
  // container's devices on to the app containers).
  auto again = allocator_->Allocate("nvidia.com/gpu", {"0-3"});
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->allocation_id, answer->allocation_id);
}

TEST_F(AllocatorTest, PreStartWritesTheDecisionOfTheContainerKubeletRecorded) {
  // Two pods ask for one slot; kubelet admits b first though a is older.
  auto a = MakePod("a", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 1000, 10}});
  auto b = MakePod("b", kNode, "nvidia.com/gpu", 1, {{"GPU-3", 2000, 20}});
  b["metadata"]["creationTimestamp"] = "2026-11-29T11:00:00Z";
  store_.Put(a);
  store_.Put(b);
  std::string id = Admit("b", "main", "nvidia.com/gpu", {"2-0"});
  ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"2-0"}).ok());
  EXPECT_THAT(Limits(id), HasSubstr("uuid.0=GPU-3\nmemory.0=2097152000\n"));
  EXPECT_THAT(Read(allocator_->CdiSpecPath(id)), HasSubstr("/dev/nvidia3"));
  EXPECT_THAT(Read(allocator_->AllocationDir(id) + "/owner.json"), HasSubstr("\"uid\":\"uid-b\""));
  EXPECT_THAT(Annotation("b", kAllocatedAnnotation), HasSubstr(id));
  EXPECT_EQ(Annotation("a", kAllocatedAnnotation), "");
}

TEST_F(AllocatorTest, MultiUnitContainersOfEveryDialectAreFound) {
  auto pod = MakePod("m", kNode, "nvidia.com/gpu", 2, {{"GPU-0", 1000, 10}, {"GPU-1", 1000, 10}});
  store_.Put(pod);
  std::string id = Admit("m", "main", "nvidia.com/gpu", {"1-4", "0-2"});
  // kubelet passes the IDs in any order.
  ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"0-2", "1-4"}).ok());
  EXPECT_THAT(Limits(id), HasSubstr("devices=2\nuuid.0=GPU-0\n"));
}

// Regression: an init container and an app container asking for the same count hold the same
// device IDs (kubelet's devicesToReuse); the app container's Allocate overwrote the init
// container's guess, and both started with one decision.
TEST_F(AllocatorTest, InitAndAppContainerWithTheSameDevicesGetTheirOwnDecisions) {
  json pod = MakePod("init", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 1000, 10}}, "app");
  json init = pod["spec"]["containers"][0];
  init["name"] = "setup";
  pod["spec"]["initContainers"] = json::array({init});
  json decision = json::parse(PodAnnotation(pod, "tessera.io/allocation"));
  json entry = decision["containers"][0];
  entry["name"] = "setup";
  entry["devices"][0]["memoryMiB"] = 500;
  decision["containers"].push_back(entry);
  pod["metadata"]["annotations"]["tessera.io/allocation"] = decision.dump();
  store_.Put(pod);
  std::string setup = Admit("init", "setup", "nvidia.com/gpu", {"1-0"});
  std::string app = Admit("init", "app", "nvidia.com/gpu", {"1-0"});
  ASSERT_NE(setup, app);
  ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"1-0"}).ok());
  EXPECT_THAT(Limits(setup), HasSubstr("memory.0=524288000\n"));
  EXPECT_THAT(Limits(app), HasSubstr("memory.0=1048576000\n"));
  json recorded = json::parse(Annotation("init", kAllocatedAnnotation));
  EXPECT_EQ(recorded["setup"]["allocation"], setup);
  EXPECT_EQ(recorded["app"]["allocation"], app);
}

// Regression: after an agent restart, the guess made at Allocate was gone and a plain init
// container (which PodResources does not list) failed every later start.
TEST_F(AllocatorTest, ANewAgentFindsTheOwnerWithoutAnythingInMemory) {
  store_.Put(MakePod("r", kNode, "nvidia.com/gpu", 1, {{"GPU-2", 1000, 10}}));
  std::string id = Admit("r", "main", "nvidia.com/gpu", {"2-1"});
  Allocator restarted(opts_, {kGpu, kCore, kMem}, store_, recorder_, kubelet_);
  ASSERT_TRUE(restarted.Init().ok());
  restarted.SetGpus(TestGpus(4));
  ASSERT_TRUE(restarted.PreStart("nvidia.com/gpu", {"2-1"}).ok());
  EXPECT_THAT(Limits(id), HasSubstr("uuid.0=GPU-2\n"));
}

TEST_F(AllocatorTest, PodWithoutDecisionGetsWholeGpusOfTheIds) {
  store_.Put(MakePod("plain", kNode, "nvidia.com/gpu", 2));
  std::string id = Admit("plain", "main", "nvidia.com/gpu", {"3-1", "1-0"});
  ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"1-0", "3-1"}).ok());
  EXPECT_THAT(Limits(id),
              HasSubstr("devices=2\nuuid.0=GPU-1\nmemory.0=0\ncores.0=0\nuuid.1=GPU-3\n"));
}

TEST_F(AllocatorTest, ImpossibleDecisionFailsWithNamedErrorAndMarksPod) {
  store_.Put(MakePod("bad", kNode, "nvidia.com/gpu", 1, {{"GPU-9", 1000, 10}}));
  Admit("bad", "main", "nvidia.com/gpu", {"0-0"});
  Status s = allocator_->PreStart("nvidia.com/gpu", {"0-0"});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("pod default/bad container main"));
  EXPECT_THAT(s.message(), HasSubstr("GPU-9 is not on this node"));
  EXPECT_THAT(Annotation("bad", kAllocationFailedAnnotation), HasSubstr("GPU-9"));
}

TEST_F(AllocatorTest, TooMuchMemoryIsImpossible) {
  store_.Put(MakePod("big", kNode, "nvidia.com/gpu", 1, {{"GPU-0", 999999, 10}}));
  Admit("big", "main", "nvidia.com/gpu", {"0-0"});
  Status s = allocator_->PreStart("nvidia.com/gpu", {"0-0"});
  EXPECT_THAT(s.message(), HasSubstr("has 81920 MiB, the decision gives 999999 MiB"));
}

// Issue 33: with node.device-memory-scaling 2, a decision above the GPU's physical memory but
// within its virtual memory is honoured, its limits file letting all of it spill; above the
// virtual memory it is refused with both sizes named.
TEST_F(AllocatorTest, ScaledGpusTakeDecisionsUpToTheirVirtualMemoryAndMaySpill) {
  std::vector<GpuInfo> gpus = TestGpus(4);
  for (GpuInfo& g : gpus) g.memory_scaling = 2;
  allocator_->SetGpus(gpus);
  store_.Put(MakePod("over", kNode, "nvidia.com/gpu", 1, {{"GPU-0", 100000, 10}}));
  std::string id = Admit("over", "main", "nvidia.com/gpu", {"0-0"});
  ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"0-0"}).ok());
  EXPECT_THAT(Limits(id),
              HasSubstr("uuid.0=GPU-0\nmemory.0=104857600000\nspill.0=104857600000\ncores.0=10\n"));
  store_.Put(MakePod("huge", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 200000, 10}}));
  Admit("huge", "main", "nvidia.com/gpu", {"1-0"});
  Status s = allocator_->PreStart("nvidia.com/gpu", {"1-0"});
  EXPECT_THAT(s.message(),
              HasSubstr("has 163840 MiB (81920 MiB x 2), the decision gives 200000 MiB"));
}

TEST_F(AllocatorTest, WhatCannotBeDecidedExactlyIsRefusedWithTheReason) {
  store_.Put(MakePod("a", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 1000, 10}}));
  ASSERT_TRUE(allocator_->Allocate("nvidia.com/gpu", {"0-0"}).ok());
  // No checkpoint entry: never the likeliest pod's decision.
  Status s = allocator_->PreStart("nvidia.com/gpu", {"0-0"});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("cannot tell which container holds nvidia.com/gpu devices 0-0"));
  EXPECT_EQ(Annotation("a", kAllocatedAnnotation), "");
  // An entry of another plugin's answer (no allocation of this agent's).
  kubelet_.Add("uid-a", "main", "nvidia.com/gpu", {"0-0"}, "");
  EXPECT_EQ(allocator_->PreStart("nvidia.com/gpu", {"0-0"}).code(),
            StatusCode::kFailedPrecondition);
  // An unreadable checkpoint.
  kubelet_.Fail(true);
  EXPECT_THAT(allocator_->PreStart("nvidia.com/gpu", {"0-0"}).message(),
              HasSubstr("the checkpoint cannot be read"));
  EXPECT_EQ(allocator_->PreStart("example.com/x", {"0-0"}).code(), StatusCode::kInvalidArgument);
}

TEST_F(AllocatorTest, APodNotInTheCacheYetIsRetriedByKubelet) {
  auto answer = allocator_->Allocate("nvidia.com/gpu", {"0-0"});
  ASSERT_TRUE(answer.ok());
  kubelet_.Add("uid-late", "main", "nvidia.com/gpu", {"0-0"}, answer->allocation_id);
  Status s = allocator_->PreStart("nvidia.com/gpu", {"0-0"});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("uid-late"));
  store_.Put(MakePod("late", kNode, "nvidia.com/gpu", 1, {{"GPU-0", 1000, 10}}));
  EXPECT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"0-0"}).ok());
}

// Regression: both vcuda plugins answered with mounts at the same container paths when the pod
// cache lagged, and kubelet kept one answer at random; now every allocation of the container
// holds its whole decision, so either answer is right.
TEST_F(AllocatorTest, BothVcudaAllocationsOfAContainerHoldItsDecision) {
  auto pod = MakePod("v", kNode, "tencent.com/vcuda-core", 30, {{"GPU-0", 1024, 30}});
  pod["spec"]["containers"][0]["resources"]["limits"]["tencent.com/vcuda-memory"] = "4";
  store_.Put(pod);
  std::string mem = Admit("v", "main", "tencent.com/vcuda-memory", {"0-0", "0-1", "0-2", "0-3"});
  std::vector<std::string> core_ids;
  for (int i = 0; i < 30; ++i) core_ids.push_back("0-" + std::to_string(i));
  std::string core = Admit("v", "main", "tencent.com/vcuda-core", core_ids);
  EXPECT_TRUE(allocator_->PreStart("tencent.com/vcuda-memory", {"0-3", "0-2", "0-1", "0-0"}).ok());
  for (const std::string& id : {mem, core}) {
    EXPECT_THAT(Limits(id), HasSubstr("memory.0=1073741824\ncores.0=30\n"));
    EXPECT_THAT(Read(allocator_->CdiSpecPath(id)), HasSubstr("/dev/nvidia0"));
  }
  EXPECT_TRUE(allocator_->PreStart("tencent.com/vcuda-core", core_ids).ok());
  // One entry on the pod, for the first allocation by resource name.
  json recorded = json::parse(Annotation("v", kAllocatedAnnotation));
  EXPECT_EQ(recorded["main"]["allocation"], core);
}

// Without CDI (kubelet 1.28), the device nodes are in the Allocate answer, fixed by the device
// IDs; a decision naming another GPU cannot be honoured.
TEST_F(AllocatorTest, WithoutCdiTheAnswerCarriesTheDeviceNodesOfTheIds) {
  opts_.cdi = false;
  allocator_ = std::make_unique<Allocator>(opts_, std::vector<ResourceSpec>{kGpu, kCore, kMem},
                                           store_, recorder_, kubelet_);
  ASSERT_TRUE(allocator_->Init().ok());
  allocator_->SetGpus(TestGpus(4));
  auto answer = allocator_->Allocate("nvidia.com/gpu", {"2-0"});
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->cdi_device.empty());
  ASSERT_EQ(answer->devices.size(), 4u);
  EXPECT_EQ(answer->devices[0].container_path, "/dev/nvidia2");
  EXPECT_EQ(answer->devices[1].container_path, "/dev/nvidiactl");
  EXPECT_EQ(answer->envs["NVIDIA_VISIBLE_DEVICES"], "GPU-2");
  store_.Put(MakePod("fits", kNode, "nvidia.com/gpu", 1, {{"GPU-2", 1000, 10}}));
  kubelet_.Add("uid-fits", "main", "nvidia.com/gpu", {"2-0"}, answer->allocation_id);
  EXPECT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"2-0"}).ok());
  store_.Put(MakePod("elsewhere", kNode, "nvidia.com/gpu", 1, {{"GPU-3", 1000, 10}}));
  std::string id = Admit("elsewhere", "main", "nvidia.com/gpu", {"1-0"});
  Status s = allocator_->PreStart("nvidia.com/gpu", {"1-0"});
  EXPECT_THAT(s.message(), HasSubstr("enable CDI"));
  EXPECT_THAT(Limits(id), HasSubstr("devices=0\n"));
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

TEST_F(AllocatorTest, PreferredSkipsContainersKubeletAlreadyAllocated) {
  store_.Put(MakePod("a", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 1, 1}}));
  auto b = MakePod("b", kNode, "nvidia.com/gpu", 1, {{"GPU-3", 1, 1}});
  b["metadata"]["creationTimestamp"] = "2026-11-29T11:00:00Z";
  store_.Put(b);
  std::vector<std::string> available = {"0-0", "1-0", "2-0", "3-0"};
  EXPECT_EQ(allocator_->Preferred("nvidia.com/gpu", available, {}, 1),
            std::vector<std::string>{"1-0"});
  Admit("a", "main", "nvidia.com/gpu", {"1-0"});
  EXPECT_EQ(allocator_->Preferred("nvidia.com/gpu", {"0-0", "2-0", "3-0"}, {}, 1),
            std::vector<std::string>{"3-0"});
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

// Issue 34: a GPU in MIG mode is no CUDA device, so a decision giving the GPU itself would hand
// the container nothing it can use; its MIG devices are what can be given.
TEST(CheckGrantTest, AGpuInMigModeIsGivenOnlyThroughItsMigDevices) {
  std::vector<GpuInfo> gpus = TestGpus(1);
  gpus[0].mig.capable = true;
  gpus[0].mig.enabled = true;
  MigInstanceInfo m;
  m.uuid = "MIG-a";
  m.profile = "3g.40gb";
  m.memory_mib = 40448;
  gpus[0].mig.instances.push_back(m);
  Status whole = CheckGrant({.mode = "hard", .devices = {{gpus[0].uuid, 1000, 10}}}, gpus);
  EXPECT_EQ(whole.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(whole.message(), HasSubstr(gpus[0].uuid + " is in MIG mode: it is no CUDA device"));
  EXPECT_TRUE(CheckGrant({.mode = "hard", .devices = {{"MIG-a", 1000, 0}}}, gpus).ok());
  gpus[0].mig.enabled = false;  // capable, not on: the GPU itself is a CUDA device
  EXPECT_TRUE(CheckGrant({.mode = "hard", .devices = {{gpus[0].uuid, 1000, 10}}}, gpus).ok());
}

}  // namespace
}  // namespace tessera::node
