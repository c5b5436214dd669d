// The host-side memory check: which containers are over, which of their processes are stopped,
// when it acts, and that a kill reaches only a process still in the container's cgroup.
#include "node/enforcement/memory_guard.h"

#include "node/enforcement/host_guard_actions.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace tessera::node {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint64_t kMiB = 1ull << 20;

GuardedContainer Container(std::vector<uint32_t> pids, uint64_t limit_mib = 1024) {
  return {.allocation = "a1",
          .ns = "default",
          .pod = "p",
          .container = "main",
          .uuid = "GPU-0",
          .limit_bytes = limit_mib * kMiB,
          .host_pids = std::move(pids),
          .cgroup_dir = "/cgroup/a1"};
}

class RecordingActions : public GuardActions {
 public:
  void Event(const std::string& ns, const std::string& pod, const std::string& reason,
             const std::string& message) override {
    events.push_back(ns + "/" + pod + " " + reason + ": " + message);
  }
  bool Kill(uint32_t pid, const std::string& cgroup_dir) override {
    killed.push_back(pid);
    EXPECT_EQ(cgroup_dir, "/cgroup/a1");
    return true;
  }
  std::vector<std::string> events;
  std::vector<uint32_t> killed;
};

TEST(FindOveruse, SumsTheContainersProcessesOnItsGpuOnly) {
  // PID 10 and 11 are the container's; 99 is a neighbour's; GPU-1 is another GPU.
  ProcessMemory memory = {{"GPU-0", {{10, 700 * kMiB}, {11, 500 * kMiB}, {99, 4000 * kMiB}}},
                          {"GPU-1", {{10, 9000 * kMiB}}}};
  std::vector<Overuse> over = FindOveruse({Container({10, 11})}, memory, 64 * kMiB);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(over[0].used_bytes, 1200 * kMiB);
  EXPECT_THAT(over[0].processes, ElementsAre(std::pair<uint32_t, uint64_t>{10, 700 * kMiB},
                                             std::pair<uint32_t, uint64_t>{11, 500 * kMiB}));
}

TEST(FindOveruse, WithinTheToleranceOrWithoutALimitIsNotOver) {
  ProcessMemory memory = {{"GPU-0", {{10, 1024 * kMiB + 60 * kMiB}}}};
  EXPECT_THAT(FindOveruse({Container({10})}, memory, 64 * kMiB), IsEmpty());
  EXPECT_THAT(FindOveruse({Container({10}, 0)}, {{"GPU-0", {{10, 99999 * kMiB}}}}, 0), IsEmpty());
  // A GPU the driver did not answer for is not judged.
  EXPECT_THAT(FindOveruse({Container({10})}, {{"GPU-1", {{10, 99999 * kMiB}}}}, 0), IsEmpty());
}

TEST(ProcessesToStop, TheLargestFirstUntilTheRestFits) {
  Overuse o{.container = Container({}, 1000), .used_bytes = 1900 * kMiB};
  o.processes = {{1, 800 * kMiB}, {2, 600 * kMiB}, {3, 500 * kMiB}};
  EXPECT_THAT(ProcessesToStop(o), ElementsAre(1u, 2u));  // 1100, then 500 fits
  o.processes = {{1, 950 * kMiB}, {2, 950 * kMiB}};
  EXPECT_THAT(ProcessesToStop(o), ElementsAre(1u));
}

TEST(MemoryGuard, ActsOnTheSecondCheckInARowAndOncePerEpisodeWhenReporting) {
  RecordingActions actions;
  MemoryGuard guard({.action = GuardAction::kReport, .tolerance = 0, .strikes = 2}, actions);
  ProcessMemory over = {{"GPU-0", {{10, 2048 * kMiB}}}};
  guard.Check({Container({10})}, over);
  EXPECT_THAT(actions.events, IsEmpty()) << "one check over is not enough";
  guard.Check({Container({10})}, over);
  ASSERT_EQ(actions.events.size(), 1u);
  EXPECT_THAT(actions.events[0], HasSubstr("default/p GPUMemoryOverLimit: container main holds "
                                           "2048 MiB of GPU GPU-0, over its limit of 1024 MiB"));
  guard.Check({Container({10})}, over);
  EXPECT_EQ(actions.events.size(), 1u) << "the same episode is reported once";
  EXPECT_THAT(actions.killed, IsEmpty());
  guard.Check({Container({10})}, {{"GPU-0", {{10, 512 * kMiB}}}});  // back under
  guard.Check({Container({10})}, over);
  guard.Check({Container({10})}, over);
  EXPECT_EQ(actions.events.size(), 2u) << "a new episode is reported again";
  EXPECT_EQ(guard.overuses(), 2u);
}

TEST(MemoryGuard, KillsTheLargestProcessesAndGoesOnWhileStillOver) {
  RecordingActions actions;
  MemoryGuard guard({.action = GuardAction::kKill, .tolerance = 0, .strikes = 1}, actions);
  ProcessMemory over = {{"GPU-0", {{10, 300 * kMiB}, {11, 1500 * kMiB}}}};
  guard.Check({Container({10, 11})}, over);
  EXPECT_THAT(actions.killed, ElementsAre(11u));
  ASSERT_EQ(actions.events.size(), 1u);
  EXPECT_THAT(actions.events[0], HasSubstr("killed host PIDs: 11"));
  guard.Check({Container({10, 11})}, over);  // 11 did not go away
  EXPECT_THAT(actions.killed, ElementsAre(11u, 11u));
  EXPECT_EQ(guard.kills(), 2u);
  EXPECT_EQ(guard.overuses(), 1u);
}

TEST(MemoryGuard, WithoutTheContainersCgroupNothingIsKilled) {
  RecordingActions actions;
  MemoryGuard guard({.action = GuardAction::kKill, .tolerance = 0, .strikes = 1}, actions);
  GuardedContainer c = Container({10});
  c.cgroup_dir = "";
  guard.Check({c}, {{"GPU-0", {{10, 2048 * kMiB}}}});
  EXPECT_THAT(actions.killed, IsEmpty());
  ASSERT_EQ(actions.events.size(), 1u);
  EXPECT_THAT(actions.events[0], HasSubstr("killed host PIDs: none"));
}

class KillIfInCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tessera-guard-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_ / "container");
    child_ = fork();
    if (child_ == 0) {
      pause();
      _exit(0);
    }
  }
  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }
  // The child's fate within a second: the signal that ended it, or 0 while it runs.
  int EndedBy() {
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (waitpid(child_, &status, WNOHANG) == child_) {
        child_ = -1;
        return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }
  std::filesystem::path dir_;
  pid_t child_ = -1;
};

TEST_F(KillIfInCgroupTest, AProcessOfTheCgroupIsKilled) {
  std::ofstream(dir_ / "container" / "cgroup.procs") << "1\n" << child_ << "\n";
  EXPECT_TRUE(KillIfInCgroup(static_cast<uint32_t>(child_), (dir_ / "container").string()));
  EXPECT_EQ(EndedBy(), SIGKILL);
}

TEST_F(KillIfInCgroupTest, AProcessNoLongerInTheCgroupIsLeftAlone) {
  std::ofstream(dir_ / "container" / "cgroup.procs") << "1\n";
  EXPECT_FALSE(KillIfInCgroup(static_cast<uint32_t>(child_), (dir_ / "container").string()));
  EXPECT_EQ(EndedBy(), 0);
}

}  // namespace
}  // namespace tessera::node
