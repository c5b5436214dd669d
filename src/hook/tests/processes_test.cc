// NVML's process lists inside a container (hooks_processes.c): with the node agent's pids file, a
// process sees its container's processes under their PIDs in the container and no other
// container's; without one, the driver's answer passes through.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "hook_env.h"
#include "process.h"

namespace tessera::hooktest {
namespace {

using std::chrono::seconds;

std::string Line(const std::string& out, const std::string& prefix) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

class ProcessesTest : public ::testing::Test {
 protected:
  HookEnv hook;
};

TEST_F(ProcessesTest, AContainerSeesItsOwnProcessesUnderItsOwnPids) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu";
  const uint64_t ctx = HookEnv::ContextCost();
  Env other = hook.ProbeEnv();  // another container's process: not in this container's pids file
  other.erase("LD_PRELOAD");
  Child neighbour({hook.probe(), "direct", "hold", std::to_string(256 * kMiB)}, other);
  ASSERT_TRUE(neighbour.WaitForLine("held", seconds(30)));

  Env env = hook.ProbeEnv();
  const std::string pids = hook.dir() + "/pids";
  env["TESSERA_PIDS_FILE"] = pids;
  Child probe({hook.probe(), "runtime", "processes", std::to_string(64 * kMiB)}, env);
  ASSERT_TRUE(probe.WaitForLine("started", seconds(30)));
  // The agent's file: the probe's host PID, and 7, its PID in the container's namespace.
  hook.WriteFile("pids", "version=1\n" + std::to_string(probe.pid()) + " 7\n");
  std::string out = probe.ReadAll(seconds(30));
  EXPECT_EQ(probe.Wait(seconds(10)), 0) << out;
  const std::string mine = "7:" + std::to_string(ctx + 64 * kMiB);
  EXPECT_EQ(Line(out, "v3"), "v3 " + mine) << out;
  EXPECT_EQ(Line(out, "v1"), "v1 " + mine) << out;
  EXPECT_EQ(Line(out, "graphics"), "graphics 0") << out;
  EXPECT_EQ(Line(out, "needed"), "needed 1") << out;
  // Utilisation samples (one per sample period of the kernel's) of this process alone, as 7.
  EXPECT_TRUE(std::regex_match(Line(out, "samples"), std::regex("samples( 7)+"))) << out;
}

TEST_F(ProcessesTest, WithoutAPidsFileTheDriversAnswerPassesThrough) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu";
  const uint64_t ctx = HookEnv::ContextCost();
  Env other = hook.ProbeEnv();
  other.erase("LD_PRELOAD");
  Child neighbour({hook.probe(), "direct", "hold", std::to_string(256 * kMiB)}, other);
  ASSERT_TRUE(neighbour.WaitForLine("held", seconds(30)));
  Child probe({hook.probe(), "direct", "processes", std::to_string(64 * kMiB)}, hook.ProbeEnv());
  const pid_t probe_pid = probe.pid();
  std::string out = probe.ReadAll(seconds(30));
  EXPECT_EQ(probe.Wait(seconds(10)), 0) << out;
  EXPECT_EQ(Line(out, "v3"), "v3 " + std::to_string(neighbour.pid()) + ":" +
                                 std::to_string(ctx + 256 * kMiB) + " " +
                                 std::to_string(probe_pid) + ":" + std::to_string(ctx + 64 * kMiB))
      << out;
  EXPECT_EQ(Line(out, "needed"), "needed 2") << out;
}

}  // namespace
}  // namespace tessera::hooktest
