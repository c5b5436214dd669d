// The node agent's half of a resize (docs/resize.md): a running container's limits file follows
// its pod's decision, whole and atomically, keeping its GPUs; metrics read the new limits; a new
// limit below what the container holds is said on the pod.
#include "node/allocation/limits_refresher.h"

#include <cstdint>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/allocation/allocation_folders.h"
#include "node/allocation/allocation_recorder.h"
#include "node/metrics/test_region.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using ::testing::HasSubstr;
using namespace tessera::node::testing;

const std::string kNode = "node-1";
const ResourceSpec kGpu{"nvidia.com/gpu", ResourceKind::kVgpuSlots};

class LimitsRefresherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opts_.node_name = kNode;
    opts_.state_dir = dir_.path() + "/state";
    opts_.cdi_dir = dir_.path() + "/cdi";
    allocator_ = std::make_unique<Allocator>(opts_, std::vector<ResourceSpec>{kGpu}, store_,
                                             recorder_, kubelet_);
    ASSERT_TRUE(allocator_->Init().ok());
    allocator_->SetGpus(TestGpus(2));
    // Pod p's container runs on GPU-1 with 4096 MiB and 30%.
    store_.Put(MakePod("p", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 4096, 30}}));
    auto answer = allocator_->Allocate("nvidia.com/gpu", {"1-0"});
    ASSERT_TRUE(answer.ok());
    id_ = answer->allocation_id;
    kubelet_.Add("uid-p", "main", "nvidia.com/gpu", {"1-0"}, id_);
    ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"1-0"}).ok());
  }
  std::string Limits() { return Read(allocator_->AllocationDir(id_) + "/limits"); }
  LimitsRefresher Refresher() {
    return LimitsRefresher(*allocator_, store_, store_,
                           {.state_dir = opts_.state_dir, .node_name = kNode});
  }

  TempDir dir_;
  AllocatorOptions opts_;
  MemoryPodStore store_{kNode};
  AllocationRecorder recorder_{store_, store_};
  FakeDeviceAssignments kubelet_;
  std::unique_ptr<Allocator> allocator_;
  std::string id_;
};

TEST_F(LimitsRefresherTest, ARunningContainersLimitsFollowItsNewDecision) {
  LimitsRefresher refresher = Refresher();
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());  // the file is the decision already
  const std::string before = Limits();
  EXPECT_THAT(before, HasSubstr("memory.0=4294967296\n"));

  store_.Put(MakePod("p", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 8192, 40}}));
  EXPECT_EQ(refresher.RunOnce(TestGpus(2)), std::vector<std::string>{id_});
  const std::string after = Limits();
  EXPECT_THAT(after, HasSubstr("uuid.0=GPU-1\n"));
  EXPECT_THAT(after, HasSubstr("memory.0=8589934592\n"));
  EXPECT_THAT(after, HasSubstr("cores.0=40\n"));
  EXPECT_THAT(after, HasSubstr("region=/var/run/tessera-region/region\n"));
  EXPECT_THAT(after, HasSubstr("version=2\nmode=hard\ndevices=1\n"));
  // Only the four sizes changed (and the end marker, which counts the bytes).
  EXPECT_EQ(after, LimitsText({.devices = {{.uuid = "GPU-1", .memory_mib = 8192, .cores = 40}}},
                              TestGpus(2)));
  // No temporary file is left behind; the metrics read the new limit.
  EXPECT_FALSE(std::filesystem::exists(allocator_->AllocationDir(id_) + "/.limits.tmp"));
  std::vector<AllocationFolder> folders = ReadAllocationFolders(opts_.state_dir);
  ASSERT_EQ(folders.size(), 1u);
  EXPECT_EQ(folders[0].devices[0].memory_bytes, uint64_t{8192} << 20);
  EXPECT_EQ(folders[0].devices[0].cores, 40);
  // Nothing more to do until the decision changes again.
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
}

TEST_F(LimitsRefresherTest, AnAgentRestartedMidWayConvergesOnItsFirstPass) {
  store_.Put(MakePod("p", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 2048, 30}}));
  // The agent that saw the change stopped before its pass; a new one starts.
  LimitsRefresher restarted = Refresher();
  EXPECT_EQ(restarted.RunOnce(TestGpus(2)), std::vector<std::string>{id_});
  EXPECT_THAT(Limits(), HasSubstr("memory.0=2147483648\n"));
}

TEST_F(LimitsRefresherTest, ADecisionNamingOtherGpusOrNoneForTheContainerLeavesTheFile) {
  const std::string before = Limits();
  LimitsRefresher refresher = Refresher();
  store_.Put(MakePod("p", kNode, "nvidia.com/gpu", 1, {{"GPU-0", 8192, 40}}));
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  store_.Put(MakePod("p", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 8192, 40}}, "other"));
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  // A pod recreated under the name (another UID) is not the owner.
  nlohmann::json recreated = MakePod("p", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 8192, 40}});
  recreated["metadata"]["uid"] = "uid-p2";
  store_.Put(recreated);
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  EXPECT_EQ(Limits(), before);
}

TEST_F(LimitsRefresherTest, ADecisionLargerThanTheGpuLeavesTheFile) {
  // 2^64 - 4096 MiB in bytes wraps around: checked like PreStartContainer's grant.
  const std::string before = Limits();
  LimitsRefresher refresher = Refresher();
  store_.Put(MakePod("p", kNode, "nvidia.com/gpu", 1, {{"GPU-1", UINT64_MAX - 4095, 30}}));
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  EXPECT_EQ(Limits(), before);
}

TEST_F(LimitsRefresherTest, ANewLimitBelowWhatTheContainerHoldsIsACeilingSaidOnThePod) {
  TestRegion region(allocator_->RegionDir(id_) + "/region", uint64_t{3072} << 20);
  store_.Put(MakePod("p", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 2048, 30}}));
  LimitsRefresher refresher = Refresher();
  EXPECT_EQ(refresher.RunOnce(TestGpus(2)).size(), 1u);
  EXPECT_THAT(Limits(), HasSubstr("memory.0=2147483648\n"));
  ASSERT_EQ(store_.Events().size(), 1u);
  EXPECT_EQ(store_.Events()[0],
            "default/p Warning GpuMemoryAboveNewLimit: container main holds 3072 MiB on GPU "
            "GPU-1, above its new limit of 2048 MiB: its new allocations are refused until its "
            "usage falls under the limit; nothing it holds is taken away");
  // The host-side memory check allows the limit before until the usage falls under the new one.
  std::vector<AllocationFolder> folders = ReadAllocationFolders(opts_.state_dir);
  ASSERT_EQ(folders.size(), 1u);
  EXPECT_EQ(folders[0].devices[0].memory_bytes, uint64_t{2048} << 20);
  EXPECT_EQ(folders[0].devices[0].guard_floor_bytes, uint64_t{4096} << 20);
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  EXPECT_EQ(ReadAllocationFolders(opts_.state_dir)[0].devices[0].guard_floor_bytes,
            uint64_t{4096} << 20);
  region.region->slots[0].used_bytes[0] = uint64_t{1024} << 20;
  region.region->devices[0].used_bytes = uint64_t{1024} << 20;
  region.Write();
  // Under the new limit, but the library has not applied it yet: the floor stays.
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  EXPECT_EQ(ReadAllocationFolders(opts_.state_dir)[0].devices[0].guard_floor_bytes,
            uint64_t{4096} << 20);
  region.region->devices[0].limit_bytes = uint64_t{2048} << 20;
  region.Write();
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  EXPECT_EQ(ReadAllocationFolders(opts_.state_dir)[0].devices[0].guard_floor_bytes, 0u);
  EXPECT_FALSE(std::filesystem::exists(allocator_->AllocationDir(id_) + "/guard-floor"));
  EXPECT_EQ(store_.Events().size(), 1u);
}

TEST_F(LimitsRefresherTest, AShrinkKeepsTheOldLimitForTheGuardUntilTheLibraryAppliesTheNewOne) {
  // The container holds 1024 MiB, under the new limit of 2048: the floor is written all the same,
  // since it may grow under its old limit of 4096 until the library reads the new file.
  TestRegion region(allocator_->RegionDir(id_) + "/region", uint64_t{1024} << 20);
  region.region->devices[0].limit_bytes = uint64_t{4096} << 20;
  region.Write();
  store_.Put(MakePod("p", kNode, "nvidia.com/gpu", 1, {{"GPU-1", 2048, 30}}));
  LimitsRefresher refresher = Refresher();
  EXPECT_EQ(refresher.RunOnce(TestGpus(2)).size(), 1u);
  EXPECT_TRUE(store_.Events().empty());  // nothing held above the new limit
  EXPECT_EQ(ReadAllocationFolders(opts_.state_dir)[0].devices[0].guard_floor_bytes,
            uint64_t{4096} << 20);
  // It grew to 3072 MiB before the library applied the new limit: the guard still allows it.
  region.region->slots[0].used_bytes[0] = uint64_t{3072} << 20;
  region.region->devices[0].used_bytes = uint64_t{3072} << 20;
  region.Write();
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  EXPECT_EQ(ReadAllocationFolders(opts_.state_dir)[0].devices[0].guard_floor_bytes,
            uint64_t{4096} << 20);
  // Applied, but still above it: kept. Under it: gone.
  region.region->devices[0].limit_bytes = uint64_t{2048} << 20;
  region.Write();
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  EXPECT_EQ(ReadAllocationFolders(opts_.state_dir)[0].devices[0].guard_floor_bytes,
            uint64_t{4096} << 20);
  region.region->slots[0].used_bytes[0] = uint64_t{512} << 20;
  region.region->devices[0].used_bytes = uint64_t{512} << 20;
  region.Write();
  EXPECT_TRUE(refresher.RunOnce(TestGpus(2)).empty());
  EXPECT_EQ(ReadAllocationFolders(opts_.state_dir)[0].devices[0].guard_floor_bytes, 0u);
  EXPECT_FALSE(std::filesystem::exists(allocator_->AllocationDir(id_) + "/guard-floor"));
}

}  // namespace
}  // namespace tessera::node
