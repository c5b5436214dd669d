// Behaviour tests of the compute limiter that are not shares: what it does with contexts, kernels
// that wait for other kernels, and graph capture. Each runs compute_scenario with
// libtessera-cuda.so preloaded over simgpu.
#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hook_env.h"

namespace tessera::hooktest {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

class ComputeScenarioTest : public ::testing::Test {
 protected:
  RunResult Scenario(const std::string& name, const Env& env) {
    return RunProgram({hook.build_dir() + "/tests/compute_scenario", name}, env, seconds(60));
  }

  Env LimitedEnv() const {
    Env env = hook.ProbeEnv();
    env["CUDA_DEVICE_SM_LIMIT"] = "50";
    env["TESSERA_LOG_LEVEL"] = "debug";
    return env;
  }

  HookEnv hook;
};

// The sampler's events belong to the context they were made in. After cuCtxDestroy or
// cuDevicePrimaryCtxReset they are released, and the next context (which may get the same handle)
// is sampled with events of its own: its kernels are measured.
TEST_F(ComputeScenarioTest, SamplerEventsGoWithTheirContext) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu";
  RunResult r = Scenario("contexts", LimitedEnv());
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  size_t from = 0;
  for (int i = 0; i < 2; ++i) {
    from = r.err.find("next context", from);
    ASSERT_NE(from, std::string::npos) << r.Describe();
    size_t next = r.err.find("next context", from + 1);
    std::string after = r.err.substr(from, next == std::string::npos ? next : next - from);
    EXPECT_THAT(after, HasSubstr("compute: key")) << "context " << i + 2 << " was never sampled";
    from = next;
    if (from == std::string::npos) break;
  }
}

// NCCL launches one kernel per GPU from one thread, and each waits for the others; a kernel may
// also spin on a flag set by a kernel launched later. The first launch of a function must not
// wait for it to finish (it did, to time it: such a process then hung for good).
TEST_F(ComputeScenarioTest, FirstLaunchOfAKernelThatWaitsForALaterOneDoesNotHang) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's waiting kernels";
  Env env = hook.ProbeEnv("count=2,memory=16GiB");
  env["CUDA_DEVICE_SM_LIMIT"] = "50";
  RunResult r =
      RunProgram({hook.build_dir() + "/tests/compute_scenario", "waiting"}, env, seconds(20));
  EXPECT_FALSE(r.timed_out) << r.Describe();
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

// A capture into an existing graph (cuStreamBeginCaptureToGraph, CUDA 12.3) forbids in global mode
// the sampler's queries from every thread, as any capture does: the library counts it like
// cuStreamBeginCapture's, exported and through cuGetProcAddress, so the capture completes while
// another thread launches under the limit (before: the sampler's cuStreamQuery from that thread
// invalidated it, and cuStreamEndCapture failed).
class CaptureToGraphTest : public ComputeScenarioTest,
                           public ::testing::WithParamInterface<std::string> {};

TEST_P(CaptureToGraphTest, CompletesWhileAnotherThreadLaunchesUnderTheLimit) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's kernels";
  std::vector<std::string> argv = {hook.build_dir() + "/tests/compute_scenario",
                                   "capture_to_graph"};
  if (GetParam() == "runtime") argv.push_back("runtime");
  RunResult r = RunProgram(argv, LimitedEnv(), seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

INSTANTIATE_TEST_SUITE_P(Routes, CaptureToGraphTest, ::testing::Values("direct", "runtime"));

// cuStreamEndCapture from another thread than the one that began a global capture is refused
// (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD), as is ending the legacy stream's capture (whose
// cuStreamIsCapturing fails while a blocking stream captures), and the capture goes on: the
// library must keep counting it. It counted it ended, and another thread's launch under the limit
// was then sampled, which invalidated the capture.
TEST_F(ComputeScenarioTest, CaptureGoesOnAfterRefusedEnds) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's kernels";
  RunResult r = Scenario("capture_ends_refused", LimitedEnv());
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

}  // namespace
}  // namespace tessera::hooktest
