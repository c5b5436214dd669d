// simgpu's MIG devices in time (docs/simgpu.md, "MIG"): each MIG device runs its kernels on a
// timeline of its own, beside the other MIG devices of its GPU, at the speed of its SMs; the
// processes of one MIG device time-slice it; NVML answers utilisation and process queries in MIG
// mode as a real driver does.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "sim_test_env.h"

namespace simgpu::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kMsNs = 1'000'000;

// NVML profile IDs (docs/mig.md) of the H100 instances these tests make.
constexpr unsigned kProfile1g10gb = 19;
constexpr unsigned kProfile3g40gb = 9;

class SimgpuMigTime : public ::testing::Test {
 protected:
  explicit SimgpuMigTime(const std::string& devices = "gpu=H100;profile=ideal") : state_(devices) {}
  void SetUp() override {
    // Makes the CUDA side register its fork handler (a forked child's cuInit starts afresh).
    int count = 0;
    cuDeviceGetCount(&count);
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &gpu_), NVML_SUCCESS);
    nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
    ASSERT_EQ(nvmlDeviceSetMigMode(gpu_, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
    ASSERT_EQ(activation, NVML_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS); }

  // Makes a GPU instance of `profile_id` at `start` with one compute instance taking all of it;
  // returns the UUID of that MIG device.
  std::string MakeMigDevice(unsigned profile_id, unsigned start, unsigned size,
                            unsigned ci_profile) {
    nvmlGpuInstancePlacement_t placement{start, size};
    nvmlGpuInstance_t gi = nullptr;
    EXPECT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(gpu_, profile_id, &placement, &gi),
              NVML_SUCCESS);
    nvmlComputeInstance_t ci = nullptr;
    EXPECT_EQ(nvmlGpuInstanceCreateComputeInstance(gi, ci_profile, &ci), NVML_SUCCESS);
    nvmlGpuInstanceInfo_t gi_info{};
    nvmlComputeInstanceInfo_t ci_info{};
    EXPECT_EQ(nvmlGpuInstanceGetInfo(gi, &gi_info), NVML_SUCCESS);
    EXPECT_EQ(nvmlComputeInstanceGetInfo_v2(ci, &ci_info), NVML_SUCCESS);
    // The MIG device of those instance ids.
    unsigned max = 0;
    EXPECT_EQ(nvmlDeviceGetMaxMigDeviceCount(gpu_, &max), NVML_SUCCESS);
    for (unsigned k = 0; k < max; ++k) {
      nvmlDevice_t mig = nullptr;
      unsigned gi_id = 0, ci_id = 0;
      if (nvmlDeviceGetMigDeviceHandleByIndex(gpu_, k, &mig) != NVML_SUCCESS ||
          nvmlDeviceGetGpuInstanceId(mig, &gi_id) != NVML_SUCCESS ||
          nvmlDeviceGetComputeInstanceId(mig, &ci_id) != NVML_SUCCESS) {
        continue;
      }
      if (gi_id != gi_info.id || ci_id != ci_info.id) continue;
      char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      EXPECT_EQ(nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)), NVML_SUCCESS);
      return uuid;
    }
    ADD_FAILURE() << "no MIG device for GPU instance " << gi_info.id;
    return "";
  }

  PrivateState state_;
  nvmlDevice_t gpu_ = nullptr;
};

// A child on MIG device `uuid` that, once the handshake lets it go, launches `kernel` `launches`
// times (grids of `blocks` blocks) between two events and sends the milliseconds between them.
class TimedChild {
 public:
  TimedChild(const std::string& uuid, const char* kernel, int launches, unsigned blocks,
             Handshake& handshake)
      : fds_(MakePipe()),
        pid_(Spawn([&] { return Run(uuid, kernel, launches, blocks, handshake); })),
        child_(pid_) {}
  ~TimedChild() {
    close(fds_[0]);
    close(fds_[1]);
  }
  pid_t pid() const { return pid_; }

  // The child's milliseconds (-1 when it sent none) and its exit status, once it is done.
  float Elapsed() {
    float ms = -1;
    if (read(fds_[0], &ms, sizeof(ms)) != sizeof(ms)) ms = -1;
    status_ = child_.Reap();
    return ms;
  }
  int status() const { return status_; }

 private:
  static std::array<int, 2> MakePipe() {
    std::array<int, 2> fds{-1, -1};
    EXPECT_EQ(pipe(fds.data()), 0);
    return fds;
  }
  // In the child: 0, or the step that failed (10-20).
  int Run(const std::string& uuid, const char* kernel, int launches, unsigned blocks,
          Handshake& handshake) {
    setenv("CUDA_VISIBLE_DEVICES", uuid.c_str(), 1);
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUmodule mod = nullptr;
    CUfunction f = nullptr;
    CUevent start = nullptr, end = nullptr;
    if (cuModuleLoadData(&mod, "image") != CUDA_SUCCESS) return 13;
    if (cuModuleGetFunction(&f, mod, kernel) != CUDA_SUCCESS) return 14;
    if (cuEventCreate(&start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
        cuEventCreate(&end, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      return 15;
    }
    handshake.SignalAndWait();
    if (cuEventRecord(start, nullptr) != CUDA_SUCCESS) return 16;
    for (int i = 0; i < launches; ++i) {
      if (cuLaunchKernel(f, blocks, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr) !=
          CUDA_SUCCESS) {
        return 17;
      }
    }
    if (cuEventRecord(end, nullptr) != CUDA_SUCCESS) return 18;
    if (cuEventSynchronize(end) != CUDA_SUCCESS) return 19;
    float ms = 0;
    if (cuEventElapsedTime(&ms, start, end) != CUDA_SUCCESS) return 20;
    return write(fds_[1], &ms, sizeof(ms)) == sizeof(ms) ? 0 : 21;
  }

  std::array<int, 2> fds_;
  pid_t pid_;
  ChildGuard child_;
  int status_ = -1;
};

// Lets `n` children that wait on `handshake` go at once.
void ReleaseAll(Handshake& handshake, int n) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(handshake.AwaitReady());
  for (int i = 0; i < n; ++i) handshake.Release();
}

TEST_F(SimgpuMigTime, ProcessesOnTwoInstancesEachGetTheirFullThroughputAtOnce) {
  // Two 3g.40gb instances (GPU instances 1 and 2); one second of 10 ms kernels on each at once.
  std::string left = MakeMigDevice(kProfile3g40gb, 0, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
  std::string right = MakeMigDevice(kProfile3g40gb, 4, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
  Handshake handshake;
  TimedChild a(left, "busy_10000us", 100, 1, handshake);
  TimedChild b(right, "busy_10000us", 100, 1, handshake);
  ReleaseAll(handshake, 2);
  float ms_a = a.Elapsed();
  float ms_b = b.Elapsed();
  ASSERT_EQ(a.status(), 0);
  ASSERT_EQ(b.status(), 0);
  // Each as fast as alone (1 s; taking turns would give each about 2 s).
  EXPECT_GE(ms_a, 1000.0f);
  EXPECT_LT(ms_a, 1300.0f);
  EXPECT_GE(ms_b, 1000.0f);
  EXPECT_LT(ms_b, 1300.0f);
  nlohmann::json dev = state_.Stat()["devices"][0];
  const nlohmann::json& gis = dev["mig"]["gpu_instances"];
  ASSERT_EQ(gis.size(), 2u);
  EXPECT_EQ(gis[0]["compute_instances"][0]["busy_ns"], 1000 * kMsNs);
  EXPECT_EQ(gis[1]["compute_instances"][0]["busy_ns"], 1000 * kMsNs);
  EXPECT_EQ(dev["busy_ns"], 2000 * kMsNs);  // the GPU counts both instances' time
  EXPECT_EQ(dev["switched_ns"], 0);
}

TEST_F(SimgpuMigTime, TwoProcessesOnOneInstanceTakeTurns) {
  std::string mig = MakeMigDevice(kProfile3g40gb, 0, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
  MakeMigDevice(kProfile3g40gb, 4, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);  // stays idle
  Handshake handshake;
  TimedChild a(mig, "busy_10000us", 100, 1, handshake);
  TimedChild b(mig, "busy_10000us", 100, 1, handshake);
  ReleaseAll(handshake, 2);
  float ms_a = a.Elapsed();
  float ms_b = b.Elapsed();
  ASSERT_EQ(a.status(), 0);
  ASSERT_EQ(b.status(), 0);
  // Time-sliced (2 ms slices): each ends near 2 s, the two seconds of work of both.
  EXPECT_GE(ms_a, 1600.0f);
  EXPECT_GE(ms_b, 1600.0f);
  nlohmann::json dev = state_.Stat()["devices"][0];
  const nlohmann::json& gis = dev["mig"]["gpu_instances"];
  ASSERT_EQ(gis.size(), 2u);
  EXPECT_EQ(gis[0]["compute_instances"][0]["busy_ns"], 2000 * kMsNs);
  EXPECT_EQ(gis[1]["compute_instances"][0]["busy_ns"], 0);
  EXPECT_EQ(dev["busy_ns_by_pid"][std::to_string(a.pid())], 1000 * kMsNs);
  EXPECT_EQ(dev["busy_ns_by_pid"][std::to_string(b.pid())], 1000 * kMsNs);
}

TEST_F(SimgpuMigTime, AnInstancesKernelSpeedFollowsItsSms) {
  // The same grid, 480 blocks of grid_1000ns, on a 3g.40gb (60 SMs: 8 waves, 8 us) and on a
  // 1g.10gb (16 SMs: 30 waves, 30 us), 1000 launches each at once.
  std::string big = MakeMigDevice(kProfile3g40gb, 0, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
  std::string small = MakeMigDevice(kProfile1g10gb, 6, 1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  Handshake handshake;
  TimedChild a(big, "grid_1000ns", 1000, 480, handshake);
  TimedChild b(small, "grid_1000ns", 1000, 480, handshake);
  ReleaseAll(handshake, 2);
  float ms_big = a.Elapsed();
  float ms_small = b.Elapsed();
  ASSERT_EQ(a.status(), 0);
  ASSERT_EQ(b.status(), 0);
  EXPECT_GE(ms_big, 8.0f);
  EXPECT_GE(ms_small, 30.0f);
  nlohmann::json gis = state_.Stat()["devices"][0]["mig"]["gpu_instances"];
  ASSERT_EQ(gis.size(), 2u);
  EXPECT_EQ(gis[0]["id"], 1);  // the 3g.40gb
  EXPECT_EQ(gis[0]["compute_instances"][0]["busy_ns"], 8 * kMsNs);
  EXPECT_EQ(gis[1]["id"], 13);  // the 1g.10gb
  EXPECT_EQ(gis[1]["compute_instances"][0]["busy_ns"], 30 * kMsNs);
}

class SimgpuMigNvml : public SimgpuMigTime {
 protected:
  SimgpuMigNvml() : SimgpuMigTime("gpu=H100;gpu=SimGPU:16GiB:108") {}
};

// A child on MIG device `uuid` holding `bytes` of device memory until the handshake lets it go.
int HoldMemory(const std::string& uuid, uint64_t bytes, Handshake& handshake) {
  setenv("CUDA_VISIBLE_DEVICES", uuid.c_str(), 1);
  if (int rc = UseDevice(0); rc != 0) return rc;
  CUdeviceptr p = 0;
  if (cuMemAlloc_v2(&p, bytes) != CUDA_SUCCESS) return 13;
  handshake.SignalAndWait();
  return 0;
}

TEST_F(SimgpuMigNvml, UtilisationIsNotSupportedAndProcessesAreListedPerMigDevice) {
  nvmlDevice_t plain = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &plain), NVML_SUCCESS);
  std::string big = MakeMigDevice(kProfile3g40gb, 0, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
  std::string small = MakeMigDevice(kProfile1g10gb, 6, 1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  nvmlDevice_t mig_big = nullptr, mig_small = nullptr;
  ASSERT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu_, 0, &mig_big), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu_, 1, &mig_small), NVML_SUCCESS);

  // Device and process utilisation: not on a GPU in MIG mode nor on its MIG devices; the GPU
  // beside it answers.
  nvmlUtilization_t utilization;
  EXPECT_EQ(nvmlDeviceGetUtilizationRates(gpu_, &utilization), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvmlDeviceGetUtilizationRates(mig_big, &utilization), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvmlDeviceGetUtilizationRates(plain, &utilization), NVML_SUCCESS);
  unsigned samples = 0;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(gpu_, nullptr, &samples, 0), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(mig_small, nullptr, &samples, 0),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(plain, nullptr, &samples, 0), NVML_ERROR_NOT_FOUND);

  Handshake handshake;
  ChildGuard a(Spawn([&] { return HoldMemory(big, 64 * kMiB, handshake); }));
  ChildGuard b(Spawn([&] { return HoldMemory(small, 32 * kMiB, handshake); }));
  ASSERT_TRUE(handshake.AwaitReady());
  ASSERT_TRUE(handshake.AwaitReady());

  // The GPU lists the processes of all its MIG devices; a MIG device, its own.
  nvmlProcessInfo_t procs[4];
  unsigned count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(gpu_, &count, procs), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(mig_big, &count, procs), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(procs[0].usedGpuMemory, 64 * kMiB);
  EXPECT_EQ(procs[0].gpuInstanceId, 1u);
  EXPECT_EQ(procs[0].computeInstanceId, 0u);
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(mig_small, &count, procs), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(procs[0].usedGpuMemory, 32 * kMiB);
  EXPECT_EQ(procs[0].gpuInstanceId, 13u);
  nvmlProcessInfo_v2_t v2[4];
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v2(mig_small, &count, v2), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(v2[0].computeInstanceId, 0u);
  count = 4;
  EXPECT_EQ(nvmlDeviceGetGraphicsRunningProcesses_v3(mig_small, &count, procs), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);

  handshake.Release();
  handshake.Release();
  EXPECT_EQ(a.Reap(), 0);
  EXPECT_EQ(b.Reap(), 0);
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(mig_big, &count, procs), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
}

}  // namespace
}  // namespace simgpu::testing
