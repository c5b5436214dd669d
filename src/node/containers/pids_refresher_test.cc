#include "node/containers/pids_refresher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "abi/host_pids.h"
#include "node/containers/fake_cgroup_tree.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using namespace tessera::node::testing;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kId = "9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ino_t Inode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

class PidsRefresherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = {.state_dir = dir_.path() + "/state",
                .cgroup_root = dir_.path() + "/cgroup",
                .proc_root = "/proc"};
    MakeCgroupRoot(options_.cgroup_root, CgroupVersion::kV2);
    fs::create_directories(AllocDir());
    std::ofstream(AllocDir() + "/owner.json")
        << R"({"namespace":"default","pod":"p","uid":"uid-p","container":"main"})"
        << "\n";
    pod_ = MakePod("p", "n", "nvidia.com/gpu", 1);
    pod_["status"] = {{"phase", "Running"},
                      {"qosClass", "Burstable"},
                      {"containerStatuses",
                       {{{"name", "main"},
                         {"containerID", "containerd://" + kId},
                         {"state", {{"running", {{"startedAt", "2026-11-29T10:00:01Z"}}}}}}}}};
    store_.Put(pod_);
  }
  std::string AllocDir() const { return options_.state_dir + "/allocations/0123456789abcdef"; }
  std::string PidsFile() const { return AllocDir() + "/" + TESSERA_PIDS_FILE_NAME; }
  std::string Line(pid_t p) const { return std::to_string(p) + " " + std::to_string(p) + "\n"; }

  TempDir dir_;
  PidsOptions options_;
  nlohmann::json pod_;
  MemoryPodStore store_{"n"};
};

TEST_F(PidsRefresherTest, WritesTheContainersPidsAtomicallyAndOnlyWhenChanged) {
  std::string cgroup = MakeContainerCgroup(options_.cgroup_root, CgroupDriver::kCgroupfs,
                                           TestQos::kBurstable, "uid-p", kId, {::getpid()});
  PidsRefresher refresher(store_, options_);
  refresher.RunOnce();
  std::string text = Read(PidsFile());
  EXPECT_EQ(text, "version=" + std::to_string(TESSERA_PIDS_VERSION) + "\n" + Line(::getpid()));
  ino_t first = Inode(PidsFile());

  refresher.RunOnce();  // nothing changed: the same file stays
  EXPECT_EQ(Inode(PidsFile()), first);

  // A process of a sub-cgroup appears: the file is replaced whole (a new inode), no temporary
  // file is left behind.
  pid_t parent = ::getppid();
  ASSERT_GT(parent, 0);
  fs::create_directories(cgroup + "/sub");
  std::ofstream(cgroup + "/sub/cgroup.procs") << parent << "\n";
  refresher.RunOnce();
  EXPECT_NE(Inode(PidsFile()), first);
  std::string both =
      parent < ::getpid() ? Line(parent) + Line(::getpid()) : Line(::getpid()) + Line(parent);
  EXPECT_EQ(Read(PidsFile()), "version=1\n" + both);
  for (const auto& e : fs::directory_iterator(AllocDir())) {
    EXPECT_THAT(e.path().filename().string(), ::testing::Not(HasSubstr("tmp")));
  }
}

TEST_F(PidsRefresherTest, MissingCgroupIsLoggedOnceAndFoundLater) {
  PidsRefresher refresher(store_, options_);
  ::testing::internal::CaptureStderr();
  refresher.RunOnce();
  refresher.RunOnce();
  refresher.RunOnce();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Read(PidsFile()), "version=1\n");
  size_t first = log.find("cgroup is not found");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("cgroup is not found", first + 1), std::string::npos) << log;
  EXPECT_THAT(log, HasSubstr(kId));

  MakeContainerCgroup(options_.cgroup_root, CgroupDriver::kSystemd, TestQos::kBurstable, "uid-p",
                      "cri-containerd-" + kId + ".scope", {::getpid()});
  refresher.RunOnce();
  EXPECT_EQ(Read(PidsFile()), "version=1\n" + Line(::getpid()));
}

TEST_F(PidsRefresherTest, AContainerThatStoppedGetsAnEmptyList) {
  MakeContainerCgroup(options_.cgroup_root, CgroupDriver::kCgroupfs, TestQos::kBurstable, "uid-p",
                      kId, {::getpid()});
  PidsRefresher refresher(store_, options_);
  refresher.RunOnce();
  EXPECT_EQ(Read(PidsFile()), "version=1\n" + Line(::getpid()));
  pod_["status"]["containerStatuses"][0]["state"] = {{"waiting", {{"reason", "CrashLoopBackOff"}}}};
  store_.Put(pod_);
  refresher.RunOnce();
  EXPECT_EQ(Read(PidsFile()), "version=1\n");
}

TEST_F(PidsRefresherTest, NothingIsWrittenWithoutARunningOwner) {
  MakeContainerCgroup(options_.cgroup_root, CgroupDriver::kCgroupfs, TestQos::kBurstable, "uid-p",
                      kId, {::getpid()});
  PidsRefresher refresher(store_, options_);
  auto expect_none = [&](const char* why) {
    refresher.RunOnce();
    EXPECT_FALSE(fs::exists(PidsFile())) << why;
  };
  nlohmann::json pending = pod_;
  pending["status"] = {{"phase", "Pending"}};  // no container ID yet
  store_.Put(pending);
  expect_none("not started");
  nlohmann::json replaced = pod_;
  replaced["metadata"]["uid"] = "uid-other";
  store_.Put(replaced);
  expect_none("another pod of the same name");
  nlohmann::json done = pod_;
  done["status"]["phase"] = "Succeeded";
  store_.Put(done);
  expect_none("finished");
  store_.Remove("default", "p");
  expect_none("gone");
  store_.Put(pod_);
  std::ofstream(AllocDir() + "/owner.json") << "{}\n";  // Allocate without PreStartContainer
  expect_none("no owner");
}

}  // namespace
}  // namespace tessera::node
