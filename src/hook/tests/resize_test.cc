// Process tests of limits that change under running processes (issue 36): the limits file is
// replaced as the node agent replaces it (a whole new file renamed into place) while hook_probe
// processes run with the library preloaded over simgpu (or a real driver:
// TESSERA_HOOK_REAL_DRIVER), steered command by command (hook_probe's "driven").
#include <stdio.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hook_env.h"

namespace tessera::hooktest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The contract: every process applies a new version within a second.
constexpr milliseconds kApplyWithin{1000};

std::string Bytes(uint64_t n) {
  return std::to_string(n);
}

// A driven hook_probe (probe.cc, "driven"): commands go in files, answers come on stdout.
class Driven {
 public:
  Driven(const HookEnv& hook, const std::string& name, const Env& env)
      : dir_(hook.dir() + "/" + name) {
    std::filesystem::create_directories(dir_);
    err_ = dir_ + "/stderr";
    // The library's lines go to a file the test reads (Child drops stderr).
    child_ = std::make_unique<Child>(
        std::vector<std::string>{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>" + err_, hook.probe(),
                                 "direct", "driven", dir_},
        env);
  }

  // Runs one command; returns its answer ("" when none came within `timeout`).
  std::string Do(const std::string& command, milliseconds timeout = seconds(30)) {
    const std::string n = std::to_string(next_++);
    const std::string path = dir_ + "/cmd." + n;
    std::ofstream(path + ".tmp") << command << "\n";
    std::filesystem::rename(path + ".tmp", path);
    return child_->LineStartingWith(n + " ", timeout).value_or("");
  }

  // What the library wrote on stderr so far.
  std::string Err() const {
    std::ifstream in(err_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  int Exit() {
    Do("exit", seconds(1));
    return child_->Wait(seconds(30));
  }

 private:
  std::string dir_, err_;
  std::unique_ptr<Child> child_;
  int next_ = 0;
};

// The milliseconds an "ok <ms>" answer reports; -1 for any other answer.
long long OkMs(const std::string& answer) {
  return answer.rfind("ok ", 0) == 0 ? std::stoll(answer.substr(3)) : -1;
}

class ResizeTest : public ::testing::Test {
 protected:
  void SetUp() override { ctx_ = HookEnv::ContextCost(); }

  // A limits file for one device: `memory` bytes, no compute limit, this test's region.
  std::string Body(uint64_t memory, const std::string& mode = "hard") const {
    return "version=2\nmode=" + mode + "\ndevices=1\nmemory.0=" + Bytes(memory) +
           "\ncores.0=0\nregion=" + hook.region_path() + "\n";
  }

  // Writes `text` (end marker included by the caller, or left out on purpose) as the node agent
  // does: a temporary file in the same folder, renamed onto the limits file.
  void Replace(const std::string& text) const {
    const std::string tmp = limits_ + ".tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, limits_);
  }
  void ReplaceWhole(const std::string& body) const {
    Replace(body + "end=" + std::to_string(body.size()) + "\n");
  }

  Env StartEnv(uint64_t memory) {
    limits_ = hook.WriteLimits("limits", Body(memory));
    Env env = hook.ProbeEnv();
    env["TESSERA_LIMITS_FILE"] = limits_;
    return env;
  }

  HookEnv hook;
  uint64_t ctx_ = 0;
  std::string limits_;
};

// A grow: the process allocates past the old limit within a second of the replacement, without
// a call of its own; cuMemGetInfo, NVML and the region show the new limit.
TEST_F(ResizeTest, GrowLetsARunningProcessAllocatePastTheOldLimitWithinASecond) {
  const uint64_t before = ctx_ + 512 * kMiB, after = ctx_ + kGiB;
  Driven p(hook, "p", StartEnv(before));
  EXPECT_THAT(p.Do("alloc " + Bytes(512 * kMiB)), StartsWith("ok"));
  EXPECT_EQ(p.Do("alloc " + Bytes(256 * kMiB)), "oom") << "the limit before the grow";
  ReplaceWhole(Body(after));
  const auto replaced = std::chrono::steady_clock::now();
  const std::string grown = p.Do("alloc-within " + Bytes(256 * kMiB) + " 5000");
  const auto took = std::chrono::steady_clock::now() - replaced;
  ASSERT_GE(OkMs(grown), 0) << grown << "\n" << p.Err();
  EXPECT_LT(took, kApplyWithin) << "from the rename to the allocation that fits";
  std::printf("applied %lld ms after the rename\n",
              static_cast<long long>(std::chrono::duration_cast<milliseconds>(took).count()));
  EXPECT_EQ(p.Do("info"),
            "free=" + Bytes(256 * kMiB) + " total=" + Bytes(after) + " nvml=" + Bytes(after));
  EXPECT_EQ(p.Do("alloc " + Bytes(512 * kMiB)), "oom") << "the new limit holds too";
  const tessera_region* region = hook.MapRegion();
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->devices[0].limit_bytes, after);
  EXPECT_EQ(region->devices[0].used_bytes, ctx_ + 768 * kMiB);
  EXPECT_EQ(p.Exit(), 0) << p.Err();
  EXPECT_EQ(p.Err(), "") << "a change applied says nothing at the default level";
}

// A shrink below what the container holds takes nothing away: it is a ceiling that refuses new
// allocations until frees bring the usage under it.
TEST_F(ResizeTest, ShrinkBelowWhatIsHeldRefusesAllocationsUntilFreesBringTheUsageUnder) {
  const uint64_t before = ctx_ + kGiB, after = ctx_ + 512 * kMiB;
  Driven p(hook, "p", StartEnv(before));
  for (int i = 0; i < 3; ++i) EXPECT_THAT(p.Do("alloc " + Bytes(256 * kMiB)), StartsWith("ok"));
  ReplaceWhole(Body(after));
  const auto replaced = std::chrono::steady_clock::now();
  EXPECT_GE(OkMs(p.Do("total-within " + Bytes(after) + " 5000")), 0) << p.Err();
  EXPECT_LT(std::chrono::steady_clock::now() - replaced, kApplyWithin);
  EXPECT_EQ(p.Do("alloc " + Bytes(2 * kMiB)), "oom") << "768 MiB held over a 512 MiB limit";
  EXPECT_EQ(p.Do("info"), "free=0 total=" + Bytes(after) + " nvml=" + Bytes(after));
  const tessera_region* region = hook.MapRegion();
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->devices[0].used_bytes, ctx_ + 768 * kMiB) << "nothing held was taken away";
  EXPECT_EQ(region->devices[0].limit_bytes, after);
  if (!HookEnv::RealDriver()) {
    EXPECT_EQ(uint64_t(hook.Stat()["devices"][0]["used_bytes"]), ctx_ + 768 * kMiB);
  }
  EXPECT_EQ(p.Do("free"), "freed");
  EXPECT_EQ(p.Do("alloc " + Bytes(2 * kMiB)), "oom") << "at the limit exactly";
  EXPECT_EQ(p.Do("free"), "freed");
  EXPECT_THAT(p.Do("alloc " + Bytes(128 * kMiB)), StartsWith("ok")) << "under it again";
  EXPECT_EQ(p.Do("alloc " + Bytes(256 * kMiB)), "oom") << "256 + 128 + 256 MiB is over 512";
  EXPECT_EQ(region->devices[0].used_bytes, ctx_ + 384 * kMiB);
  EXPECT_EQ(p.Exit(), 0) << p.Err();
}

// Every process of the container applies the change, each on its own.
TEST_F(ResizeTest, TwoProcessesOfOneContainerBothApplyAChange) {
  const uint64_t before = 2 * ctx_ + 512 * kMiB, after = 2 * ctx_ + kGiB;
  Env env = StartEnv(before);
  Driven a(hook, "a", env), b(hook, "b", env);
  EXPECT_THAT(a.Do("alloc " + Bytes(256 * kMiB)), StartsWith("ok"));
  EXPECT_THAT(b.Do("alloc " + Bytes(256 * kMiB)), StartsWith("ok"));
  EXPECT_EQ(b.Do("alloc " + Bytes(256 * kMiB)), "oom");
  ReplaceWhole(Body(after));
  const auto replaced = std::chrono::steady_clock::now();
  EXPECT_GE(OkMs(a.Do("total-within " + Bytes(after) + " 5000")), 0) << a.Err();
  EXPECT_GE(OkMs(b.Do("total-within " + Bytes(after) + " 5000")), 0) << b.Err();
  EXPECT_LT(std::chrono::steady_clock::now() - replaced, kApplyWithin);
  EXPECT_THAT(a.Do("alloc " + Bytes(256 * kMiB)), StartsWith("ok"));
  EXPECT_THAT(b.Do("alloc " + Bytes(256 * kMiB)), StartsWith("ok"));
  EXPECT_EQ(a.Do("alloc " + Bytes(2 * kMiB)), "oom") << "the two together are at the new limit";
  // And a shrink under what the two hold stops both.
  ReplaceWhole(Body(before));
  EXPECT_GE(OkMs(a.Do("total-within " + Bytes(before) + " 5000")), 0) << a.Err();
  EXPECT_GE(OkMs(b.Do("total-within " + Bytes(before) + " 5000")), 0) << b.Err();
  EXPECT_EQ(b.Do("free"), "freed");
  EXPECT_EQ(a.Do("alloc " + Bytes(2 * kMiB)), "oom") << "768 MiB held over a 512 MiB limit";
  EXPECT_EQ(a.Exit(), 0) << a.Err();
  EXPECT_EQ(b.Exit(), 0) << b.Err();
}

// A replacement the library cannot apply (it changes what may not change, or does not parse)
// leaves the limits as they were, and says once per bad version what was wrong.
TEST_F(ResizeTest, ABadReplacementIsRefusedWithOneLineAndTheOldLimitsHold) {
  const uint64_t before = ctx_ + 512 * kMiB, after = ctx_ + kGiB;
  Driven p(hook, "p", StartEnv(before));
  EXPECT_THAT(p.Do("alloc " + Bytes(256 * kMiB)), StartsWith("ok"));
  ReplaceWhole(Body(after, "elastic"));
  std::this_thread::sleep_for(milliseconds(1000));  // five of the reaper's rounds
  EXPECT_EQ(p.Do("alloc " + Bytes(512 * kMiB)), "oom");
  EXPECT_EQ(p.Do("info"),
            "free=" + Bytes(256 * kMiB) + " total=" + Bytes(before) + " nvml=" + Bytes(before));
  const std::string mode_line = "error: limits not changed: limits file " + limits_ +
                                ": mode=elastic, but the process started with mode=hard (a "
                                "running container's limits file may change memory.<i>, "
                                "spill.<i>, cores.<i> and ceiling.<i> only); the limits in "
                                "force stay\n";
  std::string err = p.Err();
  EXPECT_THAT(err, HasSubstr(mode_line));
  EXPECT_EQ(err.find(mode_line), err.rfind(mode_line)) << "once per bad version:\n" << err;
  // Cut short (no end marker): refused too, never read as "no limit".
  Replace(Body(after));
  std::this_thread::sleep_for(milliseconds(1000));
  EXPECT_EQ(p.Do("alloc " + Bytes(512 * kMiB)), "oom");
  err = p.Err();
  const std::string cut_line = "error: limits not changed: " + limits_ +
                               ": no end=<bytes> line at the end: the file is truncated or "
                               "incomplete";
  EXPECT_THAT(err, HasSubstr(cut_line));
  EXPECT_EQ(err.find(cut_line), err.rfind(cut_line)) << "once per bad version:\n" << err;
  // A good version after them applies.
  ReplaceWhole(Body(after));
  EXPECT_GE(OkMs(p.Do("alloc-within " + Bytes(512 * kMiB) + " 5000")), 0) << p.Err();
  EXPECT_EQ(p.Exit(), 0) << p.Err();
}

}  // namespace
}  // namespace tessera::hooktest
