// Process tests of spilling (issue 33): a container whose limit exceeds what its GPU has free is
// served from host memory beyond the device, up to its limit and spill.<i>, and only while the
// host has room. hook_probe runs over a small simulated GPU with the library preloaded.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hook_env.h"

namespace tessera::hooktest {
namespace {

// A device of 774 MiB: the 518 MiB a context costs (kDevices) and 256 MiB, eight blocks.
constexpr char kSmallDevice[] = "count=1,memory=774MiB,ctxmem=518MiB";
constexpr uint64_t kDeviceBytes = 774 * kMiB;
constexpr uint64_t kBlock = 32 * kMiB;
constexpr uint64_t kDeviceBlocks = 8;

std::string Bytes(uint64_t n) {
  return std::to_string(n);
}

// Counts the lines of `text` that hold `part`.
int LinesWith(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class HookSpillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's small device";
    context_ = HookEnv::ContextCost(kSmallDevice);
    // The context and sixteen blocks: eight on the device, eight beyond it.
    limit_ = context_ + 2 * kDeviceBlocks * kBlock;
  }

  // The environment of a probe under a limits file with memory.0 = limit_ and spill.0 = `spill`
  // (no key when 0).
  Env SpillEnv(uint64_t spill) {
    std::string body = "version=2\ndevices=1\nmemory.0=" + Bytes(limit_) + "\n";
    if (spill != 0) body += "spill.0=" + Bytes(spill) + "\n";
    body += "cores.0=0\nregion=" + hook.region_path() + "\n";
    Env env = hook.ProbeEnv(kSmallDevice);
    env["TESSERA_LIMITS_FILE"] = hook.WriteLimits("limits", body);
    return env;
  }

  RunResult Probe(const std::string& route, const std::vector<std::string>& args, const Env& env) {
    std::vector<std::string> argv = {hook.probe(), route};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProgram(argv, env, std::chrono::seconds(120));
  }

  // A folder standing for / with the given cgroup (v2) limit and usage and MemAvailable.
  std::string HostRoot(uint64_t cgroup_max, uint64_t cgroup_current, uint64_t mem_available) {
    std::string root = hook.dir() + "/host";
    std::filesystem::create_directories(root + "/proc/self");
    std::filesystem::create_directories(root + "/sys/fs/cgroup/pod/c");
    std::ofstream(root + "/proc/self/cgroup") << "0::/pod/c\n";
    std::ofstream(root + "/sys/fs/cgroup/pod/c/memory.max") << cgroup_max << "\n";
    std::ofstream(root + "/sys/fs/cgroup/pod/c/memory.current") << cgroup_current << "\n";
    std::ofstream(root + "/proc/meminfo")
        << "MemTotal: 67108864 kB\nMemAvailable: " << (mem_available >> 10) << " kB\n";
    return root;
  }

  // What the region records as spilled on device 0.
  uint64_t Spilled() {
    const tessera_region_spill* spill = hook.MapSpill();
    return spill ? spill->device_bytes[0] : UINT64_MAX;
  }

  HookEnv hook;
  uint64_t context_ = 0;
  uint64_t limit_ = 0;
};

class HookSpillRouteTest : public HookSpillTest,
                           public ::testing::WithParamInterface<std::string> {};

TEST_P(HookSpillRouteTest, AllocationsBeyondTheDeviceComeFromHostMemoryUpToTheLimit) {
  Env env = SpillEnv(12 * kBlock);  // more than the limit leaves: the limit refuses first
  RunResult r = Probe(
      GetParam(),
      {"spill", Bytes(limit_), Bytes(kDeviceBlocks), Bytes(kDeviceBlocks), Bytes(kBlock)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(LinesWith(r.err, "is full: serving"), 1) << "one line at the first spill: " << r.err;
  EXPECT_EQ(Spilled(), 0u) << "everything spilled was given back";
}

TEST_P(HookSpillRouteTest, VmmHandlesBeyondTheDeviceAreCreatedOnTheHost) {
  Env env = SpillEnv(12 * kBlock);
  RunResult r = Probe(
      GetParam(), {"spill-vmm", Bytes(kDeviceBlocks), Bytes(kDeviceBlocks), Bytes(kBlock)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(Spilled(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Routes, HookSpillRouteTest,
                         ::testing::Values("direct", "runtime", "runtime-ptds"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST_F(HookSpillTest, SpillBoundsTheHostPartBelowTheLimit) {
  // Four blocks may spill: the container ends there, below its limit, and sees as its total the
  // device and the four blocks.
  Env env = SpillEnv(4 * kBlock);
  RunResult r = Probe(
      "direct",
      {"spill", Bytes(kDeviceBytes + 4 * kBlock), Bytes(kDeviceBlocks), "4", Bytes(kBlock)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_F(HookSpillTest, WithoutSpillTheDeviceRefusesAsBefore) {
  for (uint64_t spill : {uint64_t{0}, uint64_t{1}}) {
    // No key, and a key of 0 written out: the device's out-of-memory stands, and the total is the
    // device's.
    Env env = SpillEnv(0);
    if (spill == 1) {
      env["TESSERA_LIMITS_FILE"] = hook.WriteLimits(
          "limits0", "version=2\ndevices=1\nmemory.0=" + Bytes(limit_) +
                         "\nspill.0=0\ncores.0=0\nregion=" + hook.region_path() + "\n");
    }
    RunResult r = Probe(
        "direct", {"spill", Bytes(kDeviceBytes), Bytes(kDeviceBlocks), "0", Bytes(kBlock)}, env);
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_EQ(r.err, "") << "silent, as before";
  }
}

TEST_F(HookSpillTest, ShortCgroupMemoryRefusesTheSpillAndSaysSo) {
  Env env = SpillEnv(12 * kBlock);
  // 200 MiB left in the container's cgroup: a 32 MiB block would leave less than 256 MiB.
  env["TESSERA_HOST_ROOM_ROOT"] = HostRoot(1 * kGiB, 824 * kMiB, 64 * kGiB);
  RunResult r =
      Probe("direct", {"spill", Bytes(limit_), Bytes(kDeviceBlocks), "0", Bytes(kBlock)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(LinesWith(r.err,
                      "host memory is short: the container's memory cgroup has 200 MiB "
                      "free; 32 MiB more would leave less than the 256 MiB margin (short "
                      "by 88 MiB)"),
            1)
      << r.err;
  EXPECT_EQ(Spilled(), 0u);
}

TEST_F(HookSpillTest, ShortNodeMemoryRefusesTheSpillAndSaysSo) {
  Env env = SpillEnv(12 * kBlock);
  env["TESSERA_HOST_ROOM_ROOT"] = HostRoot(64 * kGiB, 0, 1 * kGiB);
  RunResult r =
      Probe("direct", {"spill", Bytes(limit_), Bytes(kDeviceBlocks), "0", Bytes(kBlock)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(LinesWith(r.err, "host memory is short: the node has 1024 MiB free"), 1) << r.err;
}

TEST_F(HookSpillTest, InjectedHostFiguresWithRoomLetItSpill) {
  // The refusals above come from the figures, not from reading a folder instead of the host.
  Env env = SpillEnv(12 * kBlock);
  env["TESSERA_HOST_ROOM_ROOT"] = HostRoot(64 * kGiB, 0, 64 * kGiB);
  RunResult r = Probe(
      "direct", {"spill", Bytes(limit_), Bytes(kDeviceBlocks), Bytes(kDeviceBlocks), Bytes(kBlock)},
      env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

}  // namespace
}  // namespace tessera::hooktest
