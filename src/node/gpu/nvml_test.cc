// Discovery, health and per-process shares through NVML, on simgpu's libnvidia-ml.so.1 (built
// with the tree).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/gpu/device_board.h"
#include "node/gpu/health_monitor.h"
#include "node/gpu/nvml_gpu_source.h"
#include "node/gpu/nvml_health_probe.h"
#include "node/gpu/nvml_process_shares.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using ::testing::HasSubstr;

class NvmlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    state_ = new testing::TempDir();
    ::setenv("SIMGPU_STATE", state_->path().c_str(), 1);
    // Each process sampled on a phase of its own (nvml=own; simgpu's default is an H200's one
    // process per instant, which ProcessSharesOf's table covers).
    ::setenv("SIMGPU_DEVICES", "gpu=SimGPU-A:16GiB:108;gpu=SimGPU-H200:141GiB:132;nvml=own", 1);
  }
  static void TearDownTestSuite() { delete state_; }
  static std::string BuildDir() {
    const char* b = std::getenv("TESSERA_BUILD_DIR");
    return b ? b : "build";
  }
  static int Simgpu(const std::string& args) {
    return std::system((BuildDir() + "/bin/simgpu " + args + " >/dev/null").c_str());
  }
  void SetUp() override {
    auto lib = NvmlLibrary::Open(BuildDir() + "/lib/simgpu/libnvidia-ml.so.1");
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    nvml_ = std::move(*lib);
  }
  static testing::TempDir* state_;
  std::unique_ptr<NvmlLibrary> nvml_;
};
testing::TempDir* NvmlTest::state_ = nullptr;

TEST_F(NvmlTest, DiscoversEveryGpu) {
  NvmlGpuSource source(*nvml_);
  auto gpus = source.Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  const GpuInfo& h200 = (*gpus)[1];
  EXPECT_EQ(h200.index, 1);
  EXPECT_EQ(h200.model, "SimGPU-H200");
  EXPECT_EQ(h200.memory_mib, 141u * 1024);
  EXPECT_EQ(h200.sms, 132);
  EXPECT_THAT(h200.uuid, ::testing::StartsWith("GPU-"));
  EXPECT_NE(h200.uuid, (*gpus)[0].uuid);
  EXPECT_FALSE(h200.pci_bus_id.empty());
  EXPECT_THAT(h200.device_path, ::testing::StartsWith("/dev/nvidia"));
  EXPECT_EQ(h200.compute_capability, "9.0");
  EXPECT_EQ(h200.driver_version, "580.65.06");
}

TEST_F(NvmlTest, MissingLibraryIsAClearError) {
  auto lib = NvmlLibrary::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_THAT(lib.status().message(), HasSubstr("cannot load the NVIDIA driver's NVML library"));
}

TEST_F(NvmlTest, XidAndRemovalReachTheBoardWithinOneSecond) {
  auto gpus = NvmlGpuSource(*nvml_).Discover();
  ASSERT_TRUE(gpus.ok());
  DeviceBoard board;
  board.Set(*gpus);
  NvmlHealthProbe probe(*nvml_, *gpus);
  HealthMonitor monitor(probe, board, std::chrono::milliseconds(500));
  monitor.Start();
  auto healthy = [&](int i) { return board.Get().gpus[static_cast<size_t>(i)].healthy; };
  auto wait_for = [&](int i, bool want,
                      std::chrono::milliseconds within = std::chrono::milliseconds(1000)) {
    auto until = std::chrono::steady_clock::now() + within;
    while (healthy(i) != want && std::chrono::steady_clock::now() < until) {
      board.WaitChange(board.Get().version, std::chrono::milliseconds(50));
    }
    return healthy(i) == want;
  };
  ASSERT_EQ(Simgpu("xid 0 43"), 0);  // an application's fault: ignored
  ASSERT_EQ(Simgpu("xid 0 48"), 0);  // double-bit ECC: unhealthy
  EXPECT_TRUE(wait_for(0, false));
  EXPECT_TRUE(healthy(1));
  ASSERT_EQ(Simgpu("remove 1"), 0);
  EXPECT_TRUE(wait_for(1, false));
  ASSERT_EQ(Simgpu("restore 1"), 0);
  // Removal also posted Xid 79: both recover once they answer and the hold (0.5 s) has passed.
  EXPECT_TRUE(wait_for(1, true, std::chrono::milliseconds(1500)));
  EXPECT_TRUE(wait_for(0, true, std::chrono::milliseconds(1500)));
  monitor.Stop();
}

// Starts compute_load keeping GPU `gpu` busy with 2 ms kernels back to back for 3 s from
// `start_ms`, synchronising every `sync_every` launches (no limit: no library); its PID, or -1.
pid_t StartLoad(const std::string& build_dir, int64_t start_ms, int gpu, const char* sync_every) {
  std::string program = build_dir + "/tests/compute_load";
  std::string start = std::to_string(start_ms);
  std::vector<char*> args = {program.data(),
                             const_cast<char*>("kernel"),
                             const_cast<char*>("2000"),
                             const_cast<char*>(sync_every),
                             start.data(),
                             const_cast<char*>("3"),
                             nullptr};
  // The program is linked against simgpu's libcuda.so.1.
  std::string library_path = "LD_LIBRARY_PATH=" + build_dir + "/lib/simgpu";
  std::string visible = "CUDA_VISIBLE_DEVICES=" + std::to_string(gpu);  // first: getenv's pick
  std::vector<char*> env = {library_path.data(), visible.data()};
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  env.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, program.c_str(), nullptr, nullptr, args.data(), env.data()) != 0) return -1;
  return pid;
}

// compute_load's start time: CLOCK_MONOTONIC ms, one clock for every process of the machine.
int64_t MonotonicMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Stop(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

TEST_F(NvmlTest, ProcessSharesNameTheProcessThatKeepsTheGpuBusy) {
  auto gpus = NvmlGpuSource(*nvml_).Discover();
  ASSERT_TRUE(gpus.ok());
  pid_t pid = StartLoad(BuildDir(), MonotonicMs(), 0, "4");
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1800));
  ProcessShares shares = NvmlProcessShares(*nvml_, *gpus);
  Stop(pid);

  ASSERT_EQ(shares.count((*gpus)[0].uuid), 1u);
  const auto& busy = shares[(*gpus)[0].uuid];
  ASSERT_EQ(busy.count(static_cast<uint32_t>(pid)), 1u);
  // Only that the samples reach us: the machine may be loaded, so no tight bound.
  EXPECT_GE(busy.at(static_cast<uint32_t>(pid)), 50.0);
  EXPECT_LE(busy.at(static_cast<uint32_t>(pid)), 100.0);
  // GPU 1 answers, and the process did not use it.
  ASSERT_EQ(shares.count((*gpus)[1].uuid), 1u);
  EXPECT_EQ(shares[(*gpus)[1].uuid].count(static_cast<uint32_t>(pid)), 0u);
}

// simgpu samples each process on a phase of its own (nvml=own, as set above): shares of two
// processes taking turns on the GPU add up to its whole time. (Grouping samples by equal stamps
// read each as a quarter.) One process per instant is ProcessSharesOf's table.
TEST_F(NvmlTest, SharesOfProcessesTakingTurnsAddUpToTheBusyGpu) {
  auto gpus = NvmlGpuSource(*nvml_).Discover();
  ASSERT_TRUE(gpus.ok());
  int64_t start_ms = MonotonicMs() + 200;
  // On GPU 1, which the other tests leave alone. Batches of 64 launches (128 ms of work) ahead:
  // busy even when the host is slow to wake.
  pid_t a = StartLoad(BuildDir(), start_ms, 1, "64");
  pid_t b = StartLoad(BuildDir(), start_ms, 1, "64");
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  ProcessShares shares = NvmlProcessShares(*nvml_, *gpus);
  Stop(a);
  Stop(b);

  const auto& gpu = shares[(*gpus)[1].uuid];
  ASSERT_EQ(gpu.count(static_cast<uint32_t>(a)), 1u);
  ASSERT_EQ(gpu.count(static_cast<uint32_t>(b)), 1u);
  double sa = gpu.at(static_cast<uint32_t>(a)), sb = gpu.at(static_cast<uint32_t>(b));
  // Time-sliced, both always with work: near half each. Loose bounds for a loaded machine.
  EXPECT_GE(sa, 25.0);
  EXPECT_GE(sb, 25.0);
  EXPECT_GE(sa + sb, 80.0);
  EXPECT_LE(sa + sb, 101.0);
  EXPECT_EQ(
      ContainerShare(shares, (*gpus)[1].uuid, {static_cast<uint32_t>(a), static_cast<uint32_t>(b)})
          .value_or(0),
      static_cast<unsigned>(std::lround(std::min(sa + sb, 100.0))));
}

}  // namespace
}  // namespace tessera::node
