// simgpu's kernel times end to end, read back as `simgpu stat`'s busy_ns: `work_<N>ns` kernels take
// their first argument's units whatever the grid, through every launch path, stream capture and
// graphs (profile=ideal: exact figures); and with the default jitter the mean stays near nominal.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "abi/cuda_driver.h"
#include "sim_test_env.h"

namespace simgpu::testing {
namespace {

constexpr uint64_t kUnitNs = 1000;  // work_1000ns
constexpr uint64_t kUnits = 500;
constexpr uint64_t kLaunchNs = kUnitNs * kUnits;  // 500 us

// Reports a failed check of the child on stderr; the child then exits with `code`.
#define CHILD_CHECK(cond, code)                                                      \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: child check failed: %s\n", __FILE__, __LINE__, #cond); \
      return code;                                                                   \
    }                                                                                \
  } while (0)

// Initialises the driver, makes device 0's primary context current and finds `name`. 0 on success.
int Setup(const char* name, CUfunction* f) {
  CUcontext ctx = nullptr;
  CUmodule mod = nullptr;
  if (cuInit(0) != CUDA_SUCCESS) return 10;
  if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS) return 11;
  if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return 12;
  if (cuModuleLoadData(&mod, "image") != CUDA_SUCCESS) return 13;
  return cuModuleGetFunction(f, mod, name) == CUDA_SUCCESS ? 0 : 14;
}

uint64_t BusyNs(PrivateState& state) {
  return state.Stat()["devices"][0]["busy_ns"].get<uint64_t>();
}

// Every launch path of a work_1000ns kernel with 500 units, checked launch by launch: each adds
// exactly 500 us of device time, whatever its grid.
int EveryPathTakesItsUnits(PrivateState& state) {
  CUfunction f = nullptr;
  if (int rc = Setup("work_1000ns", &f); rc != 0) return rc;
  CUstream s = nullptr;
  CHILD_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, 20);
  uint64_t units = kUnits;
  void* params[] = {&units};
  uint64_t launches = 0;
  // After each step: every launch so far has ended and added kLaunchNs.
  auto settled = [&](uint64_t added) {
    launches += added;
    if (cuCtxSynchronize() != CUDA_SUCCESS) return false;
    uint64_t busy = BusyNs(state);
    if (busy == launches * kLaunchNs) return true;
    fprintf(stderr, "after %llu launches busy_ns=%llu, want %llu\n",
            static_cast<unsigned long long>(launches), static_cast<unsigned long long>(busy),
            static_cast<unsigned long long>(launches * kLaunchNs));
    return false;
  };

  // cuLaunchKernel(_ptsz), kernelParams: 1 block, one block per SM (132), a huge grid.
  const unsigned grids[] = {1, 132, 100'000};
  for (unsigned g : grids) {
    CHILD_CHECK(cuLaunchKernel(f, g, 1, 1, 256, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS, 21);
    CHILD_CHECK(settled(1), 22);
  }
  CHILD_CHECK(
      cuLaunchKernel_ptsz(f, 66, 2, 1, 128, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS, 23);
  CHILD_CHECK(settled(1), 24);

  // The `extra` form: one argument buffer.
  struct {
    uint64_t units;
    void* other;
  } buffer{kUnits, nullptr};
  size_t size = sizeof(buffer);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  CHILD_CHECK(cuLaunchKernel(f, 132, 1, 1, 1, 1, 1, 0, s, nullptr, extra) == CUDA_SUCCESS, 25);
  CHILD_CHECK(settled(1), 26);

  // cuLaunchKernelEx, both forms.
  CUlaunchConfig config{};
  config.gridDimX = 132;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 384;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = s;
  CHILD_CHECK(cuLaunchKernelEx(&config, f, params, nullptr) == CUDA_SUCCESS, 27);
  CHILD_CHECK(cuLaunchKernelEx(&config, f, nullptr, extra) == CUDA_SUCCESS, 28);
  CHILD_CHECK(settled(2), 29);

  // Cooperative launches.
  CHILD_CHECK(cuLaunchCooperativeKernel(f, 132, 1, 1, 64, 1, 1, 0, s, params) == CUDA_SUCCESS, 30);
  CUDA_LAUNCH_PARAMS multi{};
  multi.function = f;
  multi.gridDimX = 4;
  multi.gridDimY = multi.gridDimZ = 1;
  multi.blockDimX = multi.blockDimY = multi.blockDimZ = 1;
  multi.hStream = s;
  multi.kernelParams = params;
  CHILD_CHECK(cuLaunchCooperativeKernelMultiDevice(&multi, 1, 0) == CUDA_SUCCESS, 31);
  CHILD_CHECK(settled(2), 32);

  // Without the argument: refused, and nothing runs.
  size_t short_size = 4;
  void* short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                         &short_size, CU_LAUNCH_PARAM_END};
  void* null_param[] = {nullptr};
  CHILD_CHECK(
      cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE, 40);
  CHILD_CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, extra) == CUDA_ERROR_INVALID_VALUE,
              41);
  CHILD_CHECK(
      cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, nullptr, short_extra) == CUDA_ERROR_INVALID_VALUE,
      42);
  CHILD_CHECK(
      cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, null_param, nullptr) == CUDA_ERROR_INVALID_VALUE,
      43);
  CHILD_CHECK(
      cuLaunchCooperativeKernel(f, 1, 1, 1, 1, 1, 1, 0, s, nullptr) == CUDA_ERROR_INVALID_VALUE,
      44);
  CHILD_CHECK(cuLaunch(f) == CUDA_ERROR_INVALID_VALUE, 45);
  CHILD_CHECK(cuLaunchGridAsync(f, 2, 2, s) == CUDA_ERROR_INVALID_VALUE, 46);
  CHILD_CHECK(settled(0), 47);

  // Stream capture records the argument's value at capture time: changing it afterwards changes
  // nothing, as a real graph holds a copy of its kernels' arguments.
  CUgraph captured = nullptr;
  CUgraphExec captured_exec = nullptr;
  CHILD_CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS, 50);
  CHILD_CHECK(cuLaunchKernel(f, 132, 1, 1, 256, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS, 51);
  CHILD_CHECK(
      cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE, 52);
  CHILD_CHECK(cuLaunchKernel(f, 1000, 1, 1, 32, 1, 1, 0, s, nullptr, extra) == CUDA_SUCCESS, 53);
  CHILD_CHECK(cuStreamEndCapture(s, &captured) == CUDA_SUCCESS, 54);
  units = 7;
  buffer.units = 7;
  CHILD_CHECK(settled(0), 55);  // captured launches do not run
  CHILD_CHECK(cuGraphInstantiateWithFlags(&captured_exec, captured, 0) == CUDA_SUCCESS, 56);
  CHILD_CHECK(cuGraphLaunch(captured_exec, s) == CUDA_SUCCESS, 57);
  CHILD_CHECK(cuGraphLaunch(captured_exec, s) == CUDA_SUCCESS, 58);
  CHILD_CHECK(settled(4), 59);

  // An explicit kernel node copies its argument when it is added.
  units = kUnits;
  CUgraph g = nullptr;
  CUgraphNode node = nullptr;
  CUgraphExec exec = nullptr;
  CHILD_CHECK(cuGraphCreate(&g, 0) == CUDA_SUCCESS, 60);
  CUDA_KERNEL_NODE_PARAMS np{};
  np.func = f;
  np.gridDimX = 132;
  np.gridDimY = np.gridDimZ = 1;
  np.blockDimX = np.blockDimY = np.blockDimZ = 1;
  CHILD_CHECK(cuGraphAddKernelNode_v2(&node, g, nullptr, 0, &np) == CUDA_ERROR_INVALID_VALUE, 61);
  np.kernelParams = params;
  CHILD_CHECK(cuGraphAddKernelNode_v2(&node, g, nullptr, 0, &np) == CUDA_SUCCESS, 62);
  units = 1;
  CHILD_CHECK(cuGraphInstantiateWithFlags(&exec, g, 0) == CUDA_SUCCESS, 63);
  CHILD_CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS, 64);
  CHILD_CHECK(settled(1), 65);
  return 0;
}

TEST(SimgpuKernelTime, WorkKernelsTakeTheirUnitsWhateverTheGridOnEveryPath) {
  PrivateState state("count=1,sms=132,profile=ideal");
  pid_t child = Spawn([&] { return EveryPathTakesItsUnits(state); });
  ChildGuard guard(child);
  ASSERT_EQ(guard.Reap(), 0);
}

// Launches `count` work_1000ns kernels of `units` units back to back and synchronises.
int LaunchMany(uint64_t count, uint64_t units) {
  CUfunction f = nullptr;
  if (int rc = Setup("work_1000ns", &f); rc != 0) return rc;
  void* params[] = {&units};
  for (uint64_t i = 0; i < count; ++i) {
    if (cuLaunchKernel(f, 132, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr) != CUDA_SUCCESS) {
      return 20;
    }
  }
  return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 21;
}

// The default jitter (5%, and an outlier of 1.5x to 3x one launch in 256) varies each launch, but
// over many launches the mean stays within a few percent of nominal. The default drift (10% over
// 20 s) is left out here: a run of a fraction of a second sees one point of its cycle.
TEST(SimgpuKernelTime, DefaultJitterKeepsTheMeanNearNominal) {
  PrivateState state("count=1,sms=132,drift=0");
  constexpr uint64_t kCount = 4000, kSmallUnits = 50;  // 50 us each, 200 ms in all
  pid_t child = Spawn([&] { return LaunchMany(kCount, kSmallUnits); });
  ChildGuard guard(child);
  ASSERT_EQ(guard.Reap(), 0);
  nlohmann::json dev = state.Stat()["devices"][0];
  EXPECT_EQ(dev["imperfections"]["jitter_percent"], 5);
  uint64_t busy = dev["busy_ns"];
  const double nominal = static_cast<double>(kCount * kSmallUnits * kUnitNs);
  EXPECT_NE(busy, kCount * kSmallUnits * kUnitNs);  // the launches did vary
  EXPECT_NEAR(busy / nominal, 1.0, 0.02) << "busy_ns=" << busy;
}

// With every default, drift included, the mean lies within the drift's band.
TEST(SimgpuKernelTime, DefaultsStayWithinTheDriftBand) {
  PrivateState state("count=1,sms=132");
  constexpr uint64_t kCount = 2000, kSmallUnits = 50;
  pid_t child = Spawn([&] { return LaunchMany(kCount, kSmallUnits); });
  ChildGuard guard(child);
  ASSERT_EQ(guard.Reap(), 0);
  nlohmann::json dev = state.Stat()["devices"][0];
  EXPECT_EQ(dev["imperfections"]["drift_percent"], 10);
  uint64_t busy = dev["busy_ns"];
  const double ratio = busy / static_cast<double>(kCount * kSmallUnits * kUnitNs);
  EXPECT_GE(ratio, 0.90 * 0.99) << "busy_ns=" << busy;
  EXPECT_LE(ratio, 1.10 * 1.02) << "busy_ns=" << busy;
}

}  // namespace
}  // namespace simgpu::testing
