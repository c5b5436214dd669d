// simgpu's NVML: queries, processes, utilisation, Xid events and removed devices, steered through
// the `simgpu` CLI as a user would.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "clock.h"
#include "sim_test_env.h"

// Calls below name the first-ABI process query by its own symbol.
#undef nvmlDeviceGetComputeRunningProcesses

namespace simgpu::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

int Cli(const std::string& args) {
  return system((std::string(SIMGPU_CLI) + " " + args).c_str());
}

class SimgpuNvmlTest : public ::testing::Test {
 protected:
  // Exact kernel times (no jitter or drift): the utilisation checks count the device time. Samples
  // per period (nvml=own, the default): one process per instant has its own test below.
  SimgpuNvmlTest()
      : state_(
            "gpu=SimGPU-A:8GiB:80;gpu=SimGPU-B:16GiB:132;ctxmem=32MiB;jitter=0;drift=0;nvml=own") {}
  void SetUp() override { ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS); }
  void TearDown() override { EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS); }

  PrivateState state_;
};

TEST_F(SimgpuNvmlTest, DeviceQueries) {
  unsigned count = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  nvmlDevice_t d1 = nullptr, by_uuid = nullptr, by_bus = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &d1), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(2, &by_uuid), NVML_ERROR_INVALID_ARGUMENT);

  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  ASSERT_EQ(nvmlDeviceGetName(d1, name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "SimGPU-B");
  EXPECT_EQ(nvmlDeviceGetName(d1, name, 4), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(nvmlDeviceGetUUID(d1, uuid, sizeof(uuid)), NVML_SUCCESS);
  EXPECT_EQ(std::string(uuid), state_.Stat()["devices"][1]["uuid"]);
  ASSERT_EQ(nvmlDeviceGetHandleByUUID(uuid, &by_uuid), NVML_SUCCESS);
  EXPECT_EQ(by_uuid, d1);
  EXPECT_EQ(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &by_uuid),
            NVML_ERROR_NOT_FOUND);

  nvmlPciInfo_t pci;
  ASSERT_EQ(nvmlDeviceGetPciInfo_v3(d1, &pci), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &by_bus), NVML_SUCCESS);
  EXPECT_EQ(by_bus, d1);
  ASSERT_EQ(nvmlDeviceGetHandleByPciBusId_v2(pci.busIdLegacy, &by_bus), NVML_SUCCESS);
  EXPECT_EQ(by_bus, d1);

  unsigned index = 9, minor = 9, numa = 9;
  ASSERT_EQ(nvmlDeviceGetIndex(d1, &index), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetMinorNumber(d1, &minor), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetNumaNodeId(d1, &numa), NVML_SUCCESS);
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(minor, 1u);
  EXPECT_EQ(numa, 0u);
  nvmlDeviceAttributes_t attrs;
  ASSERT_EQ(nvmlDeviceGetAttributes_v2(d1, &attrs), NVML_SUCCESS);
  EXPECT_EQ(attrs.multiprocessorCount, 132u);
  EXPECT_EQ(attrs.memorySizeMB, 16384u);
  unsigned long long types = 0;
  ASSERT_EQ(nvmlDeviceGetSupportedEventTypes(d1, &types), NVML_SUCCESS);
  EXPECT_EQ(types, static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  EXPECT_EQ(nvmlSystemGetDriverVersion(version, sizeof(version)), NVML_SUCCESS);
  EXPECT_STREQ(nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
}

TEST_F(SimgpuNvmlTest, MemoryAndProcessesFollowTheDriver) {
  pid_t child = Spawn([] {
    // NVML ignores CUDA_VISIBLE_DEVICES; the driver honours it: ordinal 0 is physical device 1.
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    CUcontext ctx = nullptr;
    CUdeviceptr p = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuCtxCreate(&ctx, 0, 0) != CUDA_SUCCESS) return 1;
    if (cuMemAlloc(&p, 100 * kMiB + 1) != CUDA_SUCCESS) return 2;
    pause();
    return 0;
  });
  ChildGuard guard(child);
  nvmlDevice_t d1 = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &d1), NVML_SUCCESS);
  uint64_t expected = 32 * kMiB + 102 * kMiB;  // context + allocation rounded to 2 MiB
  nvmlMemory_t mem{};
  for (int i = 0; i < 500 && mem.used != expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(nvmlDeviceGetMemoryInfo(d1, &mem), NVML_SUCCESS);
  }
  EXPECT_EQ(mem.used, expected);
  EXPECT_EQ(mem.total, 16 * kGiB);
  EXPECT_EQ(mem.free, 16 * kGiB - expected);
  nvmlMemory_v2_t mem2{};
  EXPECT_EQ(nvmlDeviceGetMemoryInfo_v2(d1, &mem2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  mem2.version = nvmlMemory_v2;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo_v2(d1, &mem2), NVML_SUCCESS);
  EXPECT_EQ(mem2.used, expected);

  unsigned n = 0;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d1, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 1u);
  nvmlProcessInfo_t infos[4];
  n = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d1, &n, infos), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(infos[0].pid, static_cast<unsigned>(child));
  EXPECT_EQ(infos[0].usedGpuMemory, expected);
  nvmlProcessInfo_v2_t infos2[4];
  n = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v2(d1, &n, infos2), NVML_SUCCESS);
  EXPECT_EQ(n, 1u);
  nvmlProcessInfo_v1_t infos1[4];
  n = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses(d1, &n, infos1), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(infos1[0].usedGpuMemory, expected);

  nvmlDevice_t d0 = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &d0), NVML_SUCCESS);
  n = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d0, &n, infos), NVML_SUCCESS);
  EXPECT_EQ(n, 0u);

  kill(child, SIGKILL);
  EXPECT_EQ(guard.Reap(), 128 + SIGKILL);
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(d1, &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.used, 0u);
  n = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d1, &n, infos), NVML_SUCCESS);
  EXPECT_EQ(n, 0u);
}

TEST_F(SimgpuNvmlTest, UtilisationAndProcessSamples) {
  pid_t child = Spawn([] {
    CUcontext ctx = nullptr;
    CUmodule mod = nullptr;
    CUfunction f = nullptr;
    if (cuInit(0) != CUDA_SUCCESS || cuCtxCreate(&ctx, 0, 0) != CUDA_SUCCESS) return 1;
    cuModuleLoadData(&mod, "image");
    cuModuleGetFunction(&f, mod, "busy_100000us");
    for (int i = 0; i < 3; ++i) cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 2;  // 300 ms of device time
  });
  ASSERT_EQ(Wait(child), 0);
  uint64_t finished = NowNs();
  nvmlDevice_t d0 = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &d0), NVML_SUCCESS);
  nvmlUtilization_t util{};
  ASSERT_EQ(nvmlDeviceGetUtilizationRates(d0, &util), NVML_SUCCESS);
  // The 300 ms lie in the last second only if this thread was not stalled for 600 ms meanwhile.
  if (NowNs() - finished > 600'000'000) GTEST_SKIP() << "test thread stalled; window moved on";
  EXPECT_NEAR(util.gpu, 30u, 2u);
  // Per-process samples cover finished 1/6 s periods: wait for the one holding the work's end.
  SleepForNs(200'000'000);
  nvmlProcessUtilizationSample_t samples[32];
  unsigned n = 0;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(d0, nullptr, &n, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_GE(n, 2u);  // 300 ms of work spans at least two periods
  n = 32;
  ASSERT_EQ(nvmlDeviceGetProcessUtilization(d0, samples, &n, 0), NVML_SUCCESS);
  double busy_ms = 0;
  unsigned long long newest = 0;
  for (unsigned k = 0; k < n; ++k) {
    EXPECT_EQ(samples[k].pid, static_cast<unsigned>(child));
    EXPECT_LE(samples[k].smUtil, 100u);
    EXPECT_GT(samples[k].timeStamp, newest) << "one sample per period, oldest first";
    newest = samples[k].timeStamp;
    busy_ms += samples[k].smUtil * (1000.0 / 6) / 100;
  }
  EXPECT_NEAR(busy_ms, 300, 5 * n);  // each sample is rounded to a whole percent
  // Nothing newer than the newest sample until the next period ends.
  unsigned again = 32;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(d0, samples, &again, newest), NVML_ERROR_NOT_FOUND);
  nvmlDevice_t d1 = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &d1), NVML_SUCCESS);
  n = 8;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(d1, samples, &n, 0), NVML_ERROR_NOT_FOUND);
}

// nvml=one, as an H200 with driver 580 samples: each instant (every 1/6 s, one grid for the
// device) yields the sample of one process, drawn in proportion to the device time each got, with
// its share of the last second; a call returns each process's newest sample only.
TEST(SimgpuNvmlOneTest, OneProcessPerInstantNewestOnly) {
  PrivateState state("count=1,jitter=0,drift=0,nvml=one");
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  auto load = [](const char* kernel, int launches) {
    return Spawn([=] {
      CUcontext ctx = nullptr;
      CUmodule mod = nullptr;
      CUfunction f = nullptr;
      if (cuInit(0) != CUDA_SUCCESS || cuCtxCreate(&ctx, 0, 0) != CUDA_SUCCESS) return 1;
      cuModuleLoadData(&mod, "image");
      cuModuleGetFunction(&f, mod, kernel);
      for (int i = 0; i < launches; ++i) {
        cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
      }
      return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 2;
    });
  };
  // Two processes time-sliced for about 1.2 s of device time together.
  pid_t a = load("busy_2000us", 200), b = load("busy_2000us", 400);
  ASSERT_EQ(Wait(a), 0);
  ASSERT_EQ(Wait(b), 0);
  nvmlDevice_t d0 = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &d0), NVML_SUCCESS);
  nvmlProcessUtilizationSample_t samples[32];
  unsigned n = 32;
  ASSERT_EQ(nvmlDeviceGetProcessUtilization(d0, samples, &n, 0), NVML_SUCCESS);
  ASSERT_GE(n, 1u);
  EXPECT_LE(n, 2u) << "one sample per process: the newest";
  const double period_us = 1e6 / 6;
  for (unsigned k = 0; k < n; ++k) {
    EXPECT_TRUE(samples[k].pid == static_cast<unsigned>(a) ||
                samples[k].pid == static_cast<unsigned>(b));
    for (unsigned j = 0; j < k; ++j) EXPECT_NE(samples[j].pid, samples[k].pid);
    EXPECT_GT(samples[k].smUtil, 0u);
    EXPECT_LE(samples[k].smUtil, 100u);
    // One grid for the device: two processes' stamps are whole periods apart.
    uint64_t apart = samples[k].timeStamp > samples[0].timeStamp
                         ? samples[k].timeStamp - samples[0].timeStamp
                         : samples[0].timeStamp - samples[k].timeStamp;
    double periods = static_cast<double>(apart) / period_us;
    EXPECT_NEAR(periods, std::round(periods), 0.001) << apart << " us apart";
  }
  // Nothing newer than the newest sample of each.
  unsigned long long newest = 0;
  for (unsigned k = 0; k < n; ++k) newest = std::max(newest, samples[k].timeStamp);
  unsigned again = 32;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(d0, samples, &again, newest), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

TEST_F(SimgpuNvmlTest, XidEventWakesTheWaiterPromptly) {
  nvmlDevice_t d0 = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &d0), NVML_SUCCESS);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceRegisterEvents(d0, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceRegisterEvents(d0, nvmlEventTypeSingleBitEccError, set),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlEventData_t data{};
  EXPECT_EQ(nvmlEventSetWait_v2(set, &data, 20), NVML_ERROR_TIMEOUT);

  uint64_t posted_at = 0;
  std::thread injector([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    posted_at = NowNs();
    EXPECT_EQ(Cli("xid 0 48"), 0);
  });
  ASSERT_EQ(nvmlEventSetWait_v2(set, &data, 10'000), NVML_SUCCESS);
  uint64_t woke_at = NowNs();
  injector.join();
  EXPECT_EQ(data.device, d0);
  EXPECT_EQ(data.eventType, static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(data.eventData, 48u);
  // Generous for a loaded CI machine: the CLI start-up is included.
  EXPECT_LT(woke_at - posted_at, 100'000'000u);

  EXPECT_EQ(Cli("xid 1 31"), 0);  // device 1 is not registered in this set
  EXPECT_EQ(nvmlEventSetWait_v2(set, &data, 20), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(nvmlEventSetFree(set), NVML_SUCCESS);
}

TEST_F(SimgpuNvmlTest, RemovedDeviceIsLostUntilRestored) {
  nvmlDevice_t d1 = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &d1), NVML_SUCCESS);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceRegisterEvents(d1, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);

  ASSERT_EQ(Cli("remove 1"), 0);
  nvmlEventData_t data{};
  ASSERT_EQ(nvmlEventSetWait_v2(set, &data, 5'000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 79u);  // fallen off the bus
  unsigned count = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  nvmlDevice_t again = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &again), NVML_ERROR_GPU_IS_LOST);
  nvmlMemory_t mem;
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(d1, &mem), NVML_ERROR_GPU_IS_LOST);
  char name[64];
  EXPECT_EQ(nvmlDeviceGetName(d1, name, sizeof(name)), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(state_.Stat()["devices"][1]["removed"], true);

  pid_t child = Spawn([] {
    CUcontext ctx = nullptr;
    if (cuInit(0) != CUDA_SUCCESS) return 1;
    return cuCtxCreate(&ctx, 0, 1) == CUDA_ERROR_DEVICE_UNAVAILABLE ? 0 : 2;
  });
  EXPECT_EQ(Wait(child), 0);

  ASSERT_EQ(Cli("restore 1"), 0);
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &again), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(d1, &mem), NVML_SUCCESS);
  EXPECT_EQ(nvmlEventSetFree(set), NVML_SUCCESS);
}

}  // namespace
}  // namespace simgpu::testing
