#include "node/allocation/housekeeper.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using namespace tessera::node::testing;
namespace fs = std::filesystem;

class HousekeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opts_.node_name = "n";
    opts_.state_dir = dir_.path() + "/state";
    opts_.cdi_dir = dir_.path() + "/cdi";
    allocator_ = std::make_unique<Allocator>(
        opts_, std::vector<ResourceSpec>{{"nvidia.com/gpu", ResourceKind::kVgpuSlots}}, store_,
        recorder_, kubelet_);
    ASSERT_TRUE(allocator_->Init().ok());
    allocator_->SetGpus(TestGpus(2));
  }
  // Allocates and starts one container of pod `name`; returns the allocation ID.
  std::string Start(const std::string& name, const std::string& id) {
    store_.Put(MakePod(name, "n", "nvidia.com/gpu", 1, {{"GPU-0", 100, 10}}));
    auto a = allocator_->Allocate("nvidia.com/gpu", {id});
    EXPECT_TRUE(a.ok());
    kubelet_.Add("uid-" + name, "main", "nvidia.com/gpu", {id}, a->allocation_id);
    EXPECT_TRUE(allocator_->PreStart("nvidia.com/gpu", {id}).ok());
    return a->allocation_id;
  }

  TempDir dir_;
  AllocatorOptions opts_;
  MemoryPodStore store_{"n"};
  AllocationRecorder recorder_{store_, store_};
  FakeDeviceAssignments kubelet_;
  std::unique_ptr<Allocator> allocator_;
};

TEST_F(HousekeeperTest, DeletedAndFinishedPodsLoseTheirFilesRunningOnesKeepThem) {
  std::string gone = Start("gone", "0-0");
  std::string done = Start("done", "0-1");
  std::string running = Start("running", "1-0");
  store_.Remove("default", "gone");
  auto finished = *store_.Pod("default", "done");
  finished["status"]["phase"] = "Succeeded";
  store_.Put(finished);

  Housekeeper keeper(*allocator_, store_, opts_.state_dir, std::chrono::seconds(600));
  auto removed = keeper.RunOnce();
  EXPECT_EQ(removed.size(), 2u);
  EXPECT_FALSE(fs::exists(allocator_->AllocationDir(gone)));
  EXPECT_FALSE(fs::exists(allocator_->CdiSpecPath(done)));
  EXPECT_FALSE(fs::exists(opts_.state_dir + "/regions/" + gone));
  EXPECT_TRUE(fs::exists(allocator_->AllocationDir(running) + "/limits"));
  EXPECT_TRUE(fs::exists(allocator_->CdiSpecPath(running)));
  EXPECT_TRUE(keeper.RunOnce().empty());
}

// Regression: a pod with a deletionTimestamp lost its files while its containers still ran
// through preStop and the grace period, so a process started then ran without limits.
TEST_F(HousekeeperTest, APodBeingDeletedKeepsItsFilesUntilItIsGone) {
  std::string id = Start("stopping", "0-0");
  auto stopping = *store_.Pod("default", "stopping");
  stopping["metadata"]["deletionTimestamp"] = "2026-11-29T10:05:00Z";
  stopping["status"]["phase"] = "Running";
  store_.Put(stopping);
  Housekeeper keeper(*allocator_, store_, opts_.state_dir, std::chrono::seconds(600));
  EXPECT_TRUE(keeper.RunOnce().empty());
  EXPECT_TRUE(fs::exists(allocator_->AllocationDir(id) + "/limits"));
  EXPECT_TRUE(fs::exists(allocator_->CdiSpecPath(id)));
  store_.Remove("default", "stopping");
  EXPECT_EQ(keeper.RunOnce(), std::vector<std::string>{id});
}

TEST_F(HousekeeperTest, AllocationsWithoutOwnerGoAfterTheGrace) {
  auto a = allocator_->Allocate("nvidia.com/gpu", {"0-0"});  // never started
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(Housekeeper(*allocator_, store_, opts_.state_dir, std::chrono::seconds(600))
                  .RunOnce()
                  .empty());
  auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(allocator_->AllocationDir(a->allocation_id) + "/limits", old);
  EXPECT_EQ(
      Housekeeper(*allocator_, store_, opts_.state_dir, std::chrono::seconds(600)).RunOnce().size(),
      1u);
}

TEST_F(HousekeeperTest, AgentRestartKeepsRunningContainersLimits) {
  std::string id = Start("running", "1-3");
  std::string before;
  {
    std::ifstream in(allocator_->AllocationDir(id) + "/limits");
    before.assign(std::istreambuf_iterator<char>(in), {});
  }
  // A new agent over the same state: nothing is wiped, and PreStart (a container restart)
  // writes the same limits again.
  allocator_ = std::make_unique<Allocator>(
      opts_, std::vector<ResourceSpec>{{"nvidia.com/gpu", ResourceKind::kVgpuSlots}}, store_,
      recorder_, kubelet_);
  ASSERT_TRUE(allocator_->Init().ok());
  allocator_->SetGpus(TestGpus(2));
  std::ifstream in(allocator_->AllocationDir(id) + "/limits");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), before);
  ASSERT_TRUE(allocator_->PreStart("nvidia.com/gpu", {"1-3"}).ok());
  std::ifstream again(allocator_->AllocationDir(id) + "/limits");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(again), {}), before);
}

}  // namespace
}  // namespace tessera::node
