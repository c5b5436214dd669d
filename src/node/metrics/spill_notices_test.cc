#include "node/metrics/spill_notices.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/allocation/allocation_files.h"
#include "node/metrics/test_region.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using ::testing::HasSubstr;
using testing::TestRegion;

// Allocation `id` of container `container` of pod ns/p (a DRA claim's when `claim` is set), on
// GPU-1 with a 20 GiB limit, and the folder of its region.
void WriteAllocation(const std::string& state, const std::string& id, const std::string& container,
                     const std::string& claim = "") {
  std::string alloc = AllocationDirOf(state, id);
  ASSERT_TRUE(MakeDirs(alloc).ok());
  std::string owner =
      claim.empty() ? R"({"namespace":"ns","pod":"p","uid":"u","container":")" + container + "\"}"
                    : R"({"namespace":"ns","claim":")" + claim + R"(","uid":"u"})";
  ASSERT_TRUE(WriteFileAtomic(alloc + "/owner.json", owner).ok());
  ASSERT_TRUE(
      WriteFileAtomic(alloc + "/limits", LimitsText(Grant{"hard", {{"GPU-1", 20480, 0}}})).ok());
  ASSERT_TRUE(MakeDirs(RegionDirOf(state, id)).ok());
}

std::string RegionOf(const std::string& state, const std::string& id) {
  return RegionDirOf(state, id) + "/region";
}

// Issue 33: the first time a container's memory is served from host memory, its pod gets one
// Warning event that names the container, the GPU, the amount and what to do; it is not told
// again, not even by an agent started afresh (the file in the allocation folder).
TEST(SpillNoticesTest, TheFirstSpillIsToldOnceEvenAcrossARestartOfTheAgent) {
  testing::TempDir dir;
  const std::string state = dir.path();
  std::vector<GpuInfo> gpus = testing::TestGpus(2, 24268);
  WriteAllocation(state, "big", "trainer");
  TestRegion region(RegionOf(state, "big"), 20480ull << 20);
  MemoryPodStore store("n");
  SpillNotices notices(store, state);

  notices.Check(ReadAllocationFolders(state), gpus);
  EXPECT_TRUE(store.Events().empty()) << "a region without the appendix has spilled nothing";
  region.Spill(0, 0);
  notices.Check(ReadAllocationFolders(state), gpus);
  EXPECT_TRUE(store.Events().empty()) << "an appendix of zeros has spilled nothing";

  region.Spill(0, 4096ull << 20);
  notices.Check(ReadAllocationFolders(state), gpus);
  ASSERT_EQ(store.Events().size(), 1u);
  const std::string event = store.Events()[0];
  EXPECT_THAT(event, HasSubstr("ns/p Warning GPUMemorySpilled: container trainer has GPU memory "
                               "served from host memory, 4096 MiB on GPU 1 (GPU-1)"));
  EXPECT_THAT(event, HasSubstr("Kernels that read that memory run many times slower"));
  EXPECT_THAT(event, HasSubstr("To avoid it"));
  EXPECT_EQ(notices.notices(), 1u);
  const std::string marker = AllocationDirOf(state, "big") + "/" + kSpillNoticeFile;
  EXPECT_TRUE(std::filesystem::exists(marker));

  region.Spill(0, 8192ull << 20);  // more spills
  notices.Check(ReadAllocationFolders(state), gpus);
  SpillNotices restarted(store, state);
  restarted.Check(ReadAllocationFolders(state), gpus);
  EXPECT_EQ(store.Events().size(), 1u) << "once per container, whatever the agent's restarts";

  // Another container's first spill is its own.
  WriteAllocation(state, "other", "server");
  TestRegion other(RegionOf(state, "other"), 1024ull << 20);
  other.Spill(0, 512 << 10);
  restarted.Check(ReadAllocationFolders(state), gpus);
  ASSERT_EQ(store.Events().size(), 2u);
  EXPECT_THAT(store.Events()[1], HasSubstr("container server has GPU memory served from host "
                                           "memory, 524288 bytes on GPU 1 (GPU-1)"));
}

TEST(SpillNoticesTest, AnEventTheApiServerRefusesIsTriedAgain) {
  testing::TempDir dir;
  const std::string state = dir.path();
  WriteAllocation(state, "big", "trainer");
  TestRegion region(RegionOf(state, "big"), 20480ull << 20);
  region.Spill(0, 4096ull << 20);
  MemoryPodStore store("n");
  SpillNotices notices(store, state);
  store.FailWrites(Status(StatusCode::kUnavailable, "API server down"));
  notices.Check(ReadAllocationFolders(state), testing::TestGpus(2));
  EXPECT_TRUE(store.Events().empty());
  EXPECT_FALSE(std::filesystem::exists(AllocationDirOf(state, "big") + "/" + kSpillNoticeFile))
      << "nothing recorded, nothing remembered";
  store.FailWrites(Status::Ok());
  notices.Check(ReadAllocationFolders(state), testing::TestGpus(2));
  EXPECT_EQ(store.Events().size(), 1u);
}

TEST(SpillNoticesTest, GoneProcessesAndClaimsAreNotTold) {
  testing::TempDir dir;
  const std::string state = dir.path();
  MemoryPodStore store("n");
  SpillNotices notices(store, state);
  // A claim may serve several pods: its spill is in its metric only.
  WriteAllocation(state, "claim", "", "shared");
  TestRegion claim(RegionOf(state, "claim"), 20480ull << 20);
  claim.Spill(0, 4096ull << 20);
  // The process that spilled is gone: its slot counts for nothing, as in the metric.
  WriteAllocation(state, "gone", "trainer");
  TestRegion gone(RegionOf(state, "gone"), 20480ull << 20);
  gone.Spill(0, 4096ull << 20);
  gone.Die();
  notices.Check(ReadAllocationFolders(state), testing::TestGpus(2));
  EXPECT_TRUE(store.Events().empty()) << store.Events()[0];
}

TEST(SpillNoticesTest, TheMessageNamesEachSpilledGpu) {
  EXPECT_THAT(
      SpillMessage("c", {{"GPU-0", 0, 1ull << 30}, {"GPU-3", 3, 2ull << 30}, {"GPU-9", -1, 1000}}),
      HasSubstr("container c has GPU memory served from host memory, 1024 MiB on GPU 0 "
                "(GPU-0), 2048 MiB on GPU 3 (GPU-3) and 1000 bytes on GPU GPU-9:"));
}

}  // namespace
}  // namespace tessera::node
