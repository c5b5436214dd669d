// The housekeeper and the files of DRA claims: kept while the claim is prepared, removed (with
// their CDI spec) a grace period after their last write once it is not.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "node/allocation/housekeeper.h"
#include "node/dra/dra_driver.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node::dra {
namespace {

using nlohmann::json;
using namespace tessera::node::testing;
namespace fs = std::filesystem;

class OneClaimSource : public ClaimSource {
 public:
  Result<json> Get(const std::string& ns, const std::string& name) override {
    if (unavailable.count(name) > 0) return Unavailable("the API server is away");
    if (deleted.count(name) > 0) return NotFound("resourceclaims \"" + name + "\" not found");
    json claim;
    claim["metadata"] = {{"namespace", ns}, {"name", name}, {"uid", "uid-" + name}};
    json result = {
        {"request", "gpu-0"}, {"driver", kDriverName},
        {"pool", "n"},        {"device", "gpu-0"},
        {"shareID", "s"},     {"consumedCapacity", {{"memory", "1Gi"}, {"cores", "10"}}}};
    claim["status"]["allocation"]["devices"]["results"] = json::array({result});
    if (deallocated.count(name) > 0) claim.erase("status");
    return claim;
  }
  std::set<std::string> unavailable;  // claims whose Get fails
  std::set<std::string> deleted;      // claims the API server no longer has
  std::set<std::string> deallocated;  // claims without an allocation
};

class DraHousekeepingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opts_.node_name = "n";
    opts_.state_dir = dir_.path() + "/state";
    opts_.cdi_dir = dir_.path() + "/cdi";
    allocator_ = std::make_unique<Allocator>(
        opts_, std::vector<ResourceSpec>{{"nvidia.com/gpu", ResourceKind::kVgpuSlots}}, store_,
        recorder_, kubelet_);
    ASSERT_TRUE(allocator_->Init().ok());
    board_.Set(TestGpus(1));
    driver_ = NewDriver();
  }
  std::unique_ptr<DraDriver> NewDriver() {
    auto d = std::make_unique<DraDriver>(
        DraOptions{.node_name = "n", .state_dir = opts_.state_dir, .cdi_dir = opts_.cdi_dir},
        source_, board_);
    EXPECT_TRUE(d->Init().ok());
    return d;
  }
  void Age(const std::string& uid) {
    fs::last_write_time(driver_->AllocationDir(uid) + "/limits",
                        fs::file_time_type::clock::now() - std::chrono::hours(1));
  }

  TempDir dir_;
  AllocatorOptions opts_;
  MemoryPodStore store_{"n"};
  AllocationRecorder recorder_{store_, store_};
  FakeDeviceAssignments kubelet_;
  std::unique_ptr<Allocator> allocator_;
  OneClaimSource source_;
  DeviceBoard board_;
  std::unique_ptr<DraDriver> driver_;
};

TEST_F(DraHousekeepingTest, APreparedClaimKeepsItsFilesLongAfterTheGrace) {
  ASSERT_TRUE(driver_->Prepare({"default", "c", "uid-c"}).ok());
  Age("uid-c");
  Housekeeper keeper(*allocator_, store_, opts_.state_dir, std::chrono::seconds(600));
  keeper.SetClaimOwner(driver_.get());
  EXPECT_TRUE(keeper.RunOnce().empty());
  EXPECT_TRUE(fs::exists(driver_->AllocationDir("uid-c") + "/limits"));
  EXPECT_TRUE(fs::exists(driver_->CdiSpecPath("uid-c")));
}

TEST_F(DraHousekeepingTest, FilesOfAClaimThatIsNotPreparedGoAfterTheGrace) {
  ASSERT_TRUE(driver_->Prepare({"default", "c", "uid-c"}).ok());
  // The agent stopped before it recorded the claim: a new one does not hold it.
  fs::remove(opts_.state_dir + "/dra-claims.json");
  driver_ = NewDriver();
  ASSERT_FALSE(driver_->Holds("uid-c"));
  Housekeeper keeper(*allocator_, store_, opts_.state_dir, std::chrono::seconds(600));
  keeper.SetClaimOwner(driver_.get());
  EXPECT_TRUE(keeper.RunOnce().empty()) << "within the grace: maybe being prepared now";
  Age("uid-c");
  EXPECT_EQ(keeper.RunOnce(), std::vector<std::string>{"uid-c"});
  EXPECT_FALSE(fs::exists(driver_->AllocationDir("uid-c")));
  EXPECT_FALSE(fs::exists(driver_->RegionDir("uid-c")));
  EXPECT_FALSE(fs::exists(driver_->CdiSpecPath("uid-c")));
}

TEST_F(DraHousekeepingTest, WithoutAClaimOwnerClaimFilesGoAfterTheGrace) {
  ASSERT_TRUE(driver_->Prepare({"default", "c", "uid-c"}).ok());
  Housekeeper keeper(*allocator_, store_, opts_.state_dir, std::chrono::seconds(600));
  EXPECT_TRUE(keeper.RunOnce().empty());
  Age("uid-c");
  EXPECT_EQ(keeper.RunOnce(), std::vector<std::string>{"uid-c"});
  EXPECT_FALSE(fs::exists(driver_->CdiSpecPath("uid-c")));
}

// A torn dra-claims.json (a crash in the middle of a write by an older agent, a full disk) does
// not stop the agent: the file is set aside, every claim with a folder is held, and those the API
// server gives back are recorded again; the others are recorded at their next prepare.
TEST_F(DraHousekeepingTest, ADamagedFileIsRebuiltAndItsClaimsKeepTheirFiles) {
  ASSERT_TRUE(driver_->Prepare({"default", "c", "uid-c"}).ok());
  ASSERT_TRUE(driver_->Prepare({"default", "d", "uid-d"}).ok());
  const std::string file = opts_.state_dir + "/dra-claims.json";
  std::string text;
  {
    std::ifstream in(file);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ofstream(file, std::ios::trunc) << text.substr(0, text.size() / 2);
  source_.unavailable = {"d"};
  driver_ = NewDriver();
  EXPECT_TRUE(fs::exists(file + ".damaged"));
  EXPECT_TRUE(driver_->Holds("uid-c"));
  EXPECT_TRUE(driver_->Holds("uid-d")) << "held though the API server did not answer for it";
  Age("uid-c");
  Age("uid-d");
  Housekeeper keeper(*allocator_, store_, opts_.state_dir, std::chrono::seconds(600));
  keeper.SetClaimOwner(driver_.get());
  EXPECT_TRUE(keeper.RunOnce().empty());
  EXPECT_TRUE(fs::exists(driver_->AllocationDir("uid-d") + "/limits"));

  auto again = NewDriver();  // what the rebuild recorded is in the file again
  EXPECT_TRUE(again->Holds("uid-c"));
  EXPECT_FALSE(again->Holds("uid-d"));
  source_.unavailable.clear();
  ASSERT_TRUE(driver_->Prepare({"default", "d", "uid-d"}).ok());
  EXPECT_TRUE(NewDriver()->Holds("uid-d")) << "recorded at its next prepare";
  ASSERT_TRUE(driver_->Unprepare({"default", "d", "uid-d"}).ok());
  EXPECT_FALSE(driver_->Holds("uid-d"));
}

// A pod deleted while kubelet or the plugin was down: its claim's NodeUnprepareResources never
// comes. A claim the API server no longer has, or no longer allocates, is unprepared once it has
// been so for the grace; one in use, or one the API server cannot say about now, is kept.
TEST_F(DraHousekeepingTest, AClaimWhoseUnprepareNeverCameIsReleasedAfterTheGrace) {
  for (const char* name : {"used", "deleted", "free", "unknown"}) {
    ASSERT_TRUE(driver_->Prepare({"default", name, std::string("uid-") + name}).ok());
  }
  source_.deleted = {"deleted"};
  source_.deallocated = {"free"};
  source_.unavailable = {"unknown"};
  EXPECT_TRUE(driver_->ReleaseAbandoned(std::chrono::seconds(600)).empty()) << "not for the grace";
  EXPECT_TRUE(driver_->Holds("uid-deleted"));
  Housekeeper keeper(*allocator_, store_, opts_.state_dir, std::chrono::seconds(0));
  keeper.SetClaimOwner(driver_.get());
  std::vector<std::string> removed = keeper.RunOnce();
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{"uid-deleted", "uid-free"}));
  EXPECT_FALSE(driver_->Holds("uid-deleted"));
  EXPECT_FALSE(fs::exists(driver_->AllocationDir("uid-deleted")));
  EXPECT_FALSE(fs::exists(driver_->CdiSpecPath("uid-free")));
  EXPECT_TRUE(driver_->Holds("uid-used"));
  EXPECT_TRUE(driver_->Holds("uid-unknown"));
  EXPECT_TRUE(fs::exists(driver_->AllocationDir("uid-used") + "/limits"));
  EXPECT_FALSE(NewDriver()->Holds("uid-deleted")) << "forgotten in the file too";
}

}  // namespace
}  // namespace tessera::node::dra
