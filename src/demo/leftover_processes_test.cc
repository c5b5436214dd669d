// LeftoverProcesses finds a process by its environment, its command line or an open file in the
// folder, whichever way it refers to it, and stops seeing it once it has ended.
#include "demo/leftover_processes.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tessera::demo {
namespace {

using std::chrono::milliseconds;

class LeftoverProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "leftover.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    folder_ = tmpl;
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    std::filesystem::remove_all(folder_);
  }

  static bool RunsSleep(const std::string& comm_path) {
    std::ifstream comm(comm_path);
    std::string name;
    return std::getline(comm, name) && name == "sleep";
  }

  // Starts `sh -c script` with FOLDER_ENV=<env value>; returns once it runs `sleep`.
  void Start(const std::string& script, const std::string& env_value) {
    child_ = ::fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      ::setenv("FOLDER_ENV", env_value.c_str(), 1);
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // The exec'd shell replaces the forked copy, whose environment and files were the test's.
    // Until the shell has become `sleep`, its `touch` (which inherits the environment and fd 3)
    // may still be alive and be found too.
    const std::string comm = "/proc/" + std::to_string(child_) + "/comm";
    for (int i = 0; i < 100 && !RunsSleep(comm); ++i) ::usleep(20000);
    ASSERT_TRUE(std::filesystem::exists(folder_ + "/started"));
    ASSERT_TRUE(RunsSleep(comm));
  }

  void StopAndExpectGone() {
    ::kill(child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
    child_ = -1;
    EXPECT_TRUE(LeftoverProcesses(folder_, milliseconds(2000)).empty());
  }

  std::string folder_;
  pid_t child_ = -1;
};

TEST_F(LeftoverProcessesTest, FoundThroughItsEnvironment) {
  Start("touch \"$FOLDER_ENV/started\"; exec sleep 30", folder_);
  std::vector<std::string> left = LeftoverProcesses(folder_, milliseconds(0));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].rfind(std::to_string(child_) + " ", 0), 0u) << left[0];
  EXPECT_NE(left[0].find("sleep 30"), std::string::npos) << left[0];
  StopAndExpectGone();
}

TEST_F(LeftoverProcessesTest, FoundThroughAnOpenFile) {
  Start("exec 3>\"" + folder_ + "/log\"; touch \"" + folder_ + "/started\"; exec sleep 30",
        "elsewhere");
  // The command line of the sleep does not name the folder, its environment neither: fd 3 does.
  std::vector<std::string> left = LeftoverProcesses(folder_, milliseconds(0));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NE(left[0].find("sleep 30"), std::string::npos) << left[0];
  StopAndExpectGone();
}

TEST_F(LeftoverProcessesTest, NoneWhenNothingRefersToTheFolder) {
  EXPECT_TRUE(LeftoverProcesses(folder_, milliseconds(0)).empty());
}

}  // namespace
}  // namespace tessera::demo
