#include "node/containers/container_pids.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "node/test_support.h"

namespace tessera::node {
namespace {

using namespace tessera::node::testing;
namespace fs = std::filesystem;

void WriteProcs(const std::string& dir, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir + "/cgroup.procs") << text;
}

void WriteStatus(const std::string& proc_root, pid_t pid, const std::string& text) {
  fs::create_directories(proc_root + "/" + std::to_string(pid));
  std::ofstream(proc_root + "/" + std::to_string(pid) + "/status") << text;
}

// A child that sleeps until killed; the destructor kills and reaps it.
class Sleeper {
 public:
  Sleeper() : pid_(::fork()) {
    if (pid_ == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~Sleeper() {
    if (pid_ > 0) Reap();
  }
  void Reap() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

TEST(ContainerPidsTest, ReadsNestedCgroupsSortedWithoutDuplicates) {
  TempDir dir;
  std::string c = dir.path() + "/cri-containerd-abc.scope";
  WriteProcs(c, "30\n10\n");
  WriteProcs(c + "/container", "20\n10\n");  // a runtime's sub-cgroup
  WriteProcs(c + "/container/deeper", "5\nnot-a-pid\n\n");
  fs::create_directories(c + "/empty");  // no cgroup.procs
  EXPECT_EQ(CgroupPids(c), (std::vector<pid_t>{5, 10, 20, 30}));
  EXPECT_TRUE(CgroupPids(dir.path() + "/gone").empty());
}

TEST(ContainerPidsTest, RealProcessesWithoutANamespaceKeepTheirPid) {
  TempDir dir;
  Sleeper child;
  ASSERT_GT(child.pid(), 0);
  std::string c = dir.path() + "/ctr";
  WriteProcs(c, std::to_string(::getpid()) + "\n");
  WriteProcs(c + "/sub", std::to_string(child.pid()) + "\n");
  std::vector<ContainerPid> want = {{::getpid(), ::getpid()}, {child.pid(), child.pid()}};
  std::sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.host < b.host; });
  EXPECT_EQ(ContainerPids(c, "/proc"), want);
}

TEST(ContainerPidsTest, AProcessThatExitedIsSkipped) {
  TempDir dir;
  Sleeper gone;
  ASSERT_GT(gone.pid(), 0);
  pid_t gone_pid = gone.pid();
  gone.Reap();
  std::string c = dir.path() + "/ctr";
  WriteProcs(c, std::to_string(gone_pid) + "\n" + std::to_string(::getpid()) + "\n");
  EXPECT_EQ(ContainerPids(c, "/proc"), (std::vector<ContainerPid>{{::getpid(), ::getpid()}}));
  EXPECT_FALSE(NamespacePid("/proc", gone_pid));
}

TEST(ContainerPidsTest, NsPidGivesTheInnermostPid) {
  TempDir dir;
  std::string proc = dir.path() + "/proc";
  WriteStatus(proc, 4242, "Name:\tpython\nTgid:\t4242\nNSpid:\t4242\t7\nPPid:\t1\n");
  WriteStatus(proc, 5000, "Name:\tx\nNSpid:\t5000\t300\t1\n");  // nested twice
  WriteStatus(proc, 99, "Name:\tx\nNSpid:\t99\n");              // no namespace
  WriteStatus(proc, 98, "Name:\told kernel\nPid:\t98\n");       // no NSpid line
  WriteStatus(proc, 97, "NSpid:\tx\n");
  WriteStatus(proc, 96, "");
  EXPECT_EQ(NamespacePid(proc, 4242), 7);
  EXPECT_EQ(NamespacePid(proc, 5000), 1);
  EXPECT_EQ(NamespacePid(proc, 99), 99);
  EXPECT_EQ(NamespacePid(proc, 98), 98);
  EXPECT_FALSE(NamespacePid(proc, 97));
  EXPECT_FALSE(NamespacePid(proc, 96));
  EXPECT_FALSE(NamespacePid(proc, 12345));

  WriteProcs(dir.path() + "/ctr", "4242\n12345\n99\n");
  EXPECT_EQ(ContainerPids(dir.path() + "/ctr", proc),
            (std::vector<ContainerPid>{{99, 99}, {4242, 7}}));
}

TEST(ContainerPidsTest, PidsTextFollowsTheAbiFormat) {
  EXPECT_EQ(PidsText({}), "version=1\n");
  EXPECT_EQ(PidsText({{4242, 7}, {4300, 12}}), "version=1\n4242 7\n4300 12\n");
}

}  // namespace
}  // namespace tessera::node
