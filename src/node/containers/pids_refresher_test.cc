#include "node/containers/pids_refresher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// A DRA claim's allocation: its pids file lists the processes of every container that uses the
// claim, over pods that name it directly or made it from a template.
class ClaimPidsTest : public PidsRefresherTest {
 protected:
  void SetUp() override {
    PidsRefresherTest::SetUp();
    options_.proc_root = dir_.path() + "/proc";
    store_.Remove("default", "p");
    std::ofstream(AllocDir() + "/owner.json")
        << R"({"kind":"ResourceClaim","namespace":"default","claim":"shared","claimUid":"c-1"})"
        << "\n";
  }
  // A process of host PID `host` whose PID in its own namespace is `own`, in a fake /proc.
  void Process(pid_t host, pid_t own) {
    std::string d = options_.proc_root + "/" + std::to_string(host);
    fs::create_directories(d);
    std::ofstream(d + "/status") << "Name:\tw\nNSpid:\t" << host << "\t" << own << "\n";
  }
  // Pod `name` of namespace `ns` on this node whose container `main` uses claim entry "gpu"
  // (`direct`: naming claim `claim`; else made from a template, the claim in its status) and
  // whose container `side` uses none; each running, its processes `main_pids` and `side_pids`.
  void ClaimPod(const std::string& ns, const std::string& name, const std::string& claim,
                bool direct, const std::vector<pid_t>& main_pids,
                const std::vector<pid_t>& side_pids) {
    std::string uid = "uid-" + name;
    std::string main_id = std::string(64, 'a' + static_cast<char>(name.size() % 20));
    std::string side_id = std::string(64, 'b' + static_cast<char>(name.size() % 20));
    main_id[0] = side_id[0] = name[0];
    nlohmann::json entry = {{"name", "gpu"}};
    entry[direct ? "resourceClaimName" : "resourceClaimTemplateName"] = direct ? claim : "t";
    nlohmann::json pod = {{"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
                          {"spec",
                           {{"nodeName", "n"},
                            {"resourceClaims", {entry}},
                            {"containers",
                             {{{"name", "main"}, {"resources", {{"claims", {{{"name", "gpu"}}}}}}},
                              {{"name", "side"}}}}}},
                          {"status",
                           {{"phase", "Running"},
                            {"qosClass", "BestEffort"},
                            {"containerStatuses",
                             {{{"name", "main"},
                               {"containerID", "containerd://" + main_id},
                               {"state", {{"running", nlohmann::json::object()}}}},
                              {{"name", "side"},
                               {"containerID", "containerd://" + side_id},
                               {"state", {{"running", nlohmann::json::object()}}}}}}}}};
    if (!direct) {
      pod["status"]["resourceClaimStatuses"] = {{{"name", "gpu"}, {"resourceClaimName", claim}}};
    }
    store_.Put(pod);
    MakeContainerCgroup(options_.cgroup_root, CgroupDriver::kCgroupfs, TestQos::kBestEffort, uid,
                        main_id, main_pids);
    MakeContainerCgroup(options_.cgroup_root, CgroupDriver::kCgroupfs, TestQos::kBestEffort, uid,
                        side_id, side_pids);
  }
  // The pids file's process lines, sorted.
  std::vector<std::string> Lines() {
    std::istringstream in(Read(PidsFile()));
    std::string line;
    std::vector<std::string> lines;
    std::getline(in, line);
    EXPECT_EQ(line, "version=1");
    while (std::getline(in, line)) lines.push_back(line);
    std::sort(lines.begin(), lines.end());
    return lines;
  }
};

TEST_F(ClaimPidsTest, ListsTheProcessesOfEveryContainerThatUsesTheClaim) {
  for (pid_t host : {101, 102, 103, 104}) Process(host, host - 100);
  ClaimPod("default", "q", "shared", true, {101}, {103});
  ClaimPod("default", "r", "shared", false, {102}, {});
  ClaimPod("other", "s", "shared", true, {104}, {});  // another namespace's claim of that name
  PidsRefresher refresher(store_, options_);
  refresher.RunOnce();
  EXPECT_THAT(Lines(), ::testing::ElementsAre("101 1", "102 2"));
  EXPECT_TRUE(refresher.cgroups().empty());  // the memory guard follows device-plugin containers
}

TEST_F(ClaimPidsTest, PidsTwoContainersShareInTheirNamespacesAreLeftOut) {
  Process(201, 1);  // PID 1 of pod q's container ...
  Process(202, 1);  // ... and of pod r's: the library could not tell them apart
  Process(203, 9);
  ClaimPod("default", "q", "shared", true, {201}, {});
  ClaimPod("default", "r", "shared", true, {202, 203}, {});
  PidsRefresher refresher(store_, options_);
  ::testing::internal::CaptureStderr();
  refresher.RunOnce();
  refresher.RunOnce();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(Lines(), ::testing::ElementsAre("203 9"));
  size_t first = log.find("share PIDs in their own namespaces");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("share PIDs in their own namespaces", first + 1), std::string::npos) << log;
}

TEST_F(ClaimPidsTest, NothingIsWrittenBeforeAContainerOfTheClaimStarted) {
  PidsRefresher refresher(store_, options_);
  refresher.RunOnce();
  EXPECT_FALSE(fs::exists(PidsFile())) << "no pod uses the claim";
  ClaimPod("default", "q", "other-claim", true, {101}, {});
  refresher.RunOnce();
  EXPECT_FALSE(fs::exists(PidsFile())) << "its pods use another claim";
}

}  // namespace
}  // namespace tessera::node
