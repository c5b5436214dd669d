// simgpu across processes: one device timeline shared by all, dead processes' memory released,
// fork, CUDA_VISIBLE_DEVICES, and a state created for another machine.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "clock.h"
#include "sim_test_env.h"

namespace simgpu::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// Launches `kernel` back to back for `seconds`, synchronising every 4 launches.
int Saturate(const char* kernel, double seconds) {
  if (int rc = UseDevice(0); rc != 0) return rc;
  CUmodule mod = nullptr;
  CUfunction f = nullptr;
  if (cuModuleLoadData(&mod, "image") != CUDA_SUCCESS) return 13;
  if (cuModuleGetFunction(&f, mod, kernel) != CUDA_SUCCESS) return 14;
  uint64_t end = NowNs() + static_cast<uint64_t>(seconds * 1e9);
  while (NowNs() < end) {
    for (int i = 0; i < 4; ++i) {
      if (cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) != CUDA_SUCCESS) {
        return 15;
      }
    }
    if (cuCtxSynchronize() != CUDA_SUCCESS) return 16;
  }
  return 0;
}

TEST(SimgpuTimeline, TwoSaturatingProcessesShareTheDeviceEvenly) {
  PrivateState state("count=1");
  uint64_t start = NowNs();
  pid_t a = Spawn([] { return Saturate("busy_500us", 1.5); });
  pid_t b = Spawn([] { return Saturate("busy_500us", 1.5); });

  // Sampled while they run, busy time never runs ahead of the wall clock.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  uint64_t t1 = NowNs();
  uint64_t busy1 = state.Stat()["devices"][0]["busy_ns"];
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  uint64_t busy2 = state.Stat()["devices"][0]["busy_ns"];
  uint64_t t2 = NowNs();
  EXPECT_LE(busy2 - busy1, t2 - t1);
  EXPECT_GE(busy2 - busy1, (t2 - t1) / 2);  // both keep it busy (loose: CI machines are loaded)

  ASSERT_EQ(Wait(a), 0);
  ASSERT_EQ(Wait(b), 0);
  uint64_t wall = NowNs() - start;
  nlohmann::json dev = state.Stat()["devices"][0];
  uint64_t busy = dev["busy_ns"];
  uint64_t busy_a = dev["busy_ns_by_pid"][std::to_string(a)];
  uint64_t busy_b = dev["busy_ns_by_pid"][std::to_string(b)];
  EXPECT_LE(busy, wall);
  EXPECT_EQ(busy_a + busy_b, busy);
  double share_a = static_cast<double>(busy_a) / static_cast<double>(busy);
  EXPECT_NEAR(share_a, 0.5, 0.08) << "busy_a=" << busy_a << " busy_b=" << busy_b;
}

TEST(SimgpuTimeline, QueuedWorkIsNotCountedBeforeItRuns) {
  PrivateState state("count=1,jitter=0,drift=0");  // the kernel takes exactly 400 ms
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = Spawn([&] {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUmodule mod = nullptr;
    CUfunction f = nullptr;
    cuModuleLoadData(&mod, "image");
    cuModuleGetFunction(&f, mod, "busy_400000us");
    cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);  // 400 ms queued
    char c = 'x';
    if (write(fds[1], &c, 1) != 1) return 20;
    return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 21;
  });
  char c;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  uint64_t t0 = NowNs();
  uint64_t busy0 = state.Stat()["devices"][0]["busy_ns"];
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  uint64_t busy1 = state.Stat()["devices"][0]["busy_ns"];
  uint64_t t1 = NowNs();
  EXPECT_LE(busy0, t0);  // never more than what has elapsed
  EXPECT_LE(busy1 - busy0, t1 - t0 + 1'000'000);
  EXPECT_LT(busy1, 400'000'000u);
  ASSERT_EQ(Wait(child), 0);
  EXPECT_EQ(state.Stat()["devices"][0]["busy_ns"], 400'000'000u);
  close(fds[0]);
  close(fds[1]);
}

// Queues `count` launches of `kernel`, says so on `ready_fd`, then waits for them.
int QueueDeep(const char* kernel, int count, int ready_fd) {
  if (int rc = UseDevice(0); rc != 0) return rc;
  CUmodule mod = nullptr;
  CUfunction f = nullptr;
  if (cuModuleLoadData(&mod, "image") != CUDA_SUCCESS) return 13;
  if (cuModuleGetFunction(&f, mod, kernel) != CUDA_SUCCESS) return 14;
  for (int i = 0; i < count; ++i) {
    if (cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) != CUDA_SUCCESS) {
      return 15;
    }
  }
  char c = 'q';
  if (write(ready_fd, &c, 1) != 1) return 16;
  return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 17;
}

// Device time of each PID over one second while two processes have deep queues of 5 ms kernels.
void ExpectHalfEachOverOneSecond(const std::string& devices) {
  PrivateState state(devices);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ChildGuard a(Spawn([&] { return QueueDeep("busy_5000us", 400, fds[1]); }));
  ChildGuard b(Spawn([&] { return QueueDeep("busy_5000us", 400, fds[1]); }));
  char c;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  nlohmann::json before = state.Stat()["devices"][0];
  uint64_t t0 = NowNs();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  nlohmann::json after = state.Stat()["devices"][0];
  uint64_t wall = NowNs() - t0;
  uint64_t busy = after["busy_ns"].get<uint64_t>() - before["busy_ns"].get<uint64_t>();
  uint64_t switched =
      after.value("switched_ns", uint64_t{0}) - before.value("switched_ns", uint64_t{0});
  EXPECT_LE(busy, wall);
  // Both always have work queued: the device runs one or switches between them (157 us a 2 ms
  // slice by default, 7% of the time).
  EXPECT_GE(busy + switched, wall * 95 / 100);
  EXPECT_GT(switched, 0u);
  for (const auto& [pid, ns] : after["busy_ns_by_pid"].items()) {
    uint64_t was = before["busy_ns_by_pid"].value(pid, uint64_t{0});
    double share = static_cast<double>(ns.get<uint64_t>() - was) / static_cast<double>(busy);
    EXPECT_NEAR(share, 0.5, 0.02) << "pid " << pid;
  }
  EXPECT_EQ(after["busy_ns_by_pid"].size(), 2u);
  close(fds[0]);
  close(fds[1]);
}

TEST(SimgpuTimeline, TwoProcessesWithDeepQueuesGetHalfTheDeviceEachWhenTimeSliced) {
  ExpectHalfEachOverOneSecond("count=1");  // the default: time-sliced, 2 ms
}

TEST(SimgpuTimeline, HalfEachWithLongerSlicesToo) {
  ExpectHalfEachOverOneSecond("count=1,sched=timeslice,timeslice=10ms");
}

// How long (ms) a 20 us kernel launched beside another process's 500 ms queue of 5 ms kernels
// takes from its launch to cuCtxSynchronize's return.
double ShortKernelBesideADeepQueue(const std::string& devices) {
  PrivateState state(devices);
  int fds[2];
  if (pipe(fds) != 0) return -1;
  ChildGuard queue(Spawn([&] { return QueueDeep("busy_5000us", 100, fds[1]); }));
  char c;
  if (read(fds[0], &c, 1) != 1) return -1;
  int out[2];
  if (pipe(out) != 0) return -1;
  ChildGuard one(Spawn([&] {
    if (UseDevice(0) != 0) return 1;
    CUmodule mod = nullptr;
    CUfunction f = nullptr;
    cuModuleLoadData(&mod, "image");
    cuModuleGetFunction(&f, mod, "busy_20us");
    uint64_t t0 = NowNs();
    cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    if (cuCtxSynchronize() != CUDA_SUCCESS) return 2;
    double ms = static_cast<double>(NowNs() - t0) / 1e6;
    return write(out[1], &ms, sizeof(ms)) == sizeof(ms) ? 0 : 3;
  }));
  double ms = -1;
  if (read(out[0], &ms, sizeof(ms)) != sizeof(ms)) return -1;
  EXPECT_EQ(state.Stat()["devices"][0]["sched"],
            devices.find("fifo") == std::string::npos ? "timeslice" : "fifo");
  for (int fd : {fds[0], fds[1], out[0], out[1]}) close(fd);
  return ms;
}

TEST(SimgpuTimeline, AShortKernelBesideADeepQueueWaitsAboutOneSliceWhenTimeSliced) {
  double ms = ShortKernelBesideADeepQueue("count=1");
  // At most the rest of the other context's 2 ms slice and its own 20 us (plus wake-up slack on a
  // loaded machine), not the 500 ms queue.
  EXPECT_GT(ms, 0.02);
  EXPECT_LT(ms, 2.02 + 3);
}

TEST(SimgpuTimeline, FifoKeepsAShortKernelBehindTheWholeQueue) {
  double ms = ShortKernelBesideADeepQueue("count=1,sched=fifo");
  EXPECT_GT(ms, 400);  // launch order: after the other process's queue
}

TEST(SimgpuMemory, KilledProcessMemoryIsReleased) {
  PrivateState state("count=1,memory=4GiB");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t holder = Spawn([&] {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, 3 * kGiB) != CUDA_SUCCESS) return 30;
    char c = 'x';
    if (write(fds[1], &c, 1) != 1) return 31;
    pause();
    return 0;
  });
  ChildGuard guard(holder);
  char c;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  EXPECT_EQ(state.Stat()["devices"][0]["used_bytes"], 3 * kGiB);
  kill(holder, SIGKILL);
  EXPECT_EQ(guard.Reap(), 128 + SIGKILL);
  // Another process can have the whole device at once: the allocation sweeps the dead holder.
  pid_t taker = Spawn([] {
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUdeviceptr p = 0;
    return cuMemAlloc(&p, 4 * kGiB) == CUDA_SUCCESS ? 0 : 32;
  });
  EXPECT_EQ(Wait(taker), 0);
  nlohmann::json dev = state.Stat()["devices"][0];
  EXPECT_EQ(dev["used_bytes"], 0u);
  EXPECT_EQ(dev["peak_used_bytes"], 4 * kGiB);
  close(fds[0]);
  close(fds[1]);
}

TEST(SimgpuMemory, ForkedChildHasItsOwnDriverAndMemory) {
  PrivateState state("count=1,memory=4GiB");
  ASSERT_EQ(UseDevice(0), 0);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 100 * kMiB), CUDA_SUCCESS);
  pid_t child = Spawn([] {
    CUcontext ctx = nullptr;
    // The parent's context is not the child's.
    if (cuCtxGetCurrent(&ctx) != CUDA_ERROR_NOT_INITIALIZED) return 40;
    if (int rc = UseDevice(0); rc != 0) return rc;
    CUdeviceptr q = 0;
    if (cuMemAlloc(&q, 200 * kMiB) != CUDA_SUCCESS) return 41;
    size_t free_bytes = 0, total = 0;
    cuMemGetInfo(&free_bytes, &total);
    return free_bytes == 4 * kGiB - 100 * kMiB - 200 * kMiB ? 0 : 42;
  });
  EXPECT_EQ(Wait(child), 0);
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, 4 * kGiB - 100 * kMiB);  // the exited child's memory is back
  ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
}

// Runs in a child: cuInit under `cvd` (and SIMGPU_DEV_ROOT=`dev_root`) and the names of the
// devices it sees, comma separated; with `nvml`, NVML's view instead: "<name>:<index>:<minor>".
std::string VisibleNames(const char* cvd, const char* dev_root = nullptr, bool nvml = false) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t child = Spawn([&] {
    if (cvd == nullptr) {
      unsetenv("CUDA_VISIBLE_DEVICES");
    } else {
      setenv("CUDA_VISIBLE_DEVICES", cvd, 1);
    }
    if (dev_root != nullptr) setenv("SIMGPU_DEV_ROOT", dev_root, 1);
    std::string out;
    CUresult r = nvml ? CUDA_SUCCESS : cuInit(0);
    if (nvml && nvmlInit_v2() == NVML_SUCCESS) {
      unsigned n = 0;
      nvmlDeviceGetCount_v2(&n);
      for (unsigned i = 0; i < n; ++i) {
        nvmlDevice_t d = nullptr;
        char name[64] = "";
        unsigned index = 99, minor = 99;
        nvmlDeviceGetHandleByIndex_v2(i, &d);
        nvmlDeviceGetName(d, name, sizeof(name));
        nvmlDeviceGetIndex(d, &index);
        nvmlDeviceGetMinorNumber(d, &minor);
        out += (i ? "," : "") + std::string(name) + ":" + std::to_string(index) + ":" +
               std::to_string(minor);
      }
    } else if (r != CUDA_SUCCESS) {
      out = "error " + std::to_string(r);
    } else {
      int n = 0;
      cuDeviceGetCount(&n);
      for (int i = 0; i < n; ++i) {
        char name[64];
        cuDeviceGetName(name, sizeof(name), i);
        out += (i ? "," : "") + std::string(name);
      }
    }
    return write(fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0 : 1;
  });
  close(fds[1]);
  std::string result;
  char buf[256];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) result.append(buf, n);
  close(fds[0]);
  Wait(child);
  return result;
}

TEST(SimgpuVisibleDevices, IndexesAndUuidsInTheGivenOrder) {
  PrivateState state("gpu=A:1GiB:10;gpu=B:2GiB:20;gpu=C:3GiB:30");
  std::string uuid_b = state.Stat()["devices"][1]["uuid"];
  EXPECT_EQ(VisibleNames(nullptr), "A,B,C");
  EXPECT_EQ(VisibleNames("2,0"), "C,A");
  EXPECT_EQ(VisibleNames(uuid_b.c_str()), "B");
  EXPECT_EQ(VisibleNames((uuid_b.substr(0, 12) + ",0").c_str()), "B,A");  // unique prefix
  EXPECT_EQ(VisibleNames("1,7,0"), "B");  // enumeration stops at an invalid entry
  EXPECT_EQ(VisibleNames("1,1"), "B");    // and at a repeated one
  EXPECT_EQ(VisibleNames(""), "error " + std::to_string(CUDA_ERROR_NO_DEVICE));
  EXPECT_EQ(VisibleNames("GPU-nonexistent"), "error " + std::to_string(CUDA_ERROR_NO_DEVICE));
}

// Regression: a container given one GPU's device node by CDI saw every GPU of the node, so a
// program on "GPU 0" used a GPU it was not given, with no limit. The real driver shows only the
// GPUs whose device nodes the process has.
TEST(SimgpuVisibleDevices, OnlyTheDevicesWhoseNodesTheProcessHas) {
  PrivateState state("gpu=A:1GiB:10;gpu=B:2GiB:20;gpu=C:3GiB:30");
  std::string root = state.dir() + "/root";
  std::filesystem::create_directories(root + "/dev");
  for (const char* node : {"/dev/nvidia2", "/dev/nvidia0", "/dev/nvidiactl"}) {
    std::ofstream(root + node).put('\n');
  }
  EXPECT_EQ(VisibleNames(nullptr, root.c_str()), "A,C");
  EXPECT_EQ(VisibleNames("1", root.c_str()), "C");  // ordinals count the present devices
  std::string uuid_b = state.Stat()["devices"][1]["uuid"];
  EXPECT_EQ(VisibleNames(uuid_b.c_str(), root.c_str()),
            "error " + std::to_string(CUDA_ERROR_NO_DEVICE));
  // NVML numbers them in order; the minor number stays the physical one.
  EXPECT_EQ(VisibleNames(nullptr, root.c_str(), /*nvml=*/true), "A:0:0,C:1:2");
  std::filesystem::remove(root + "/dev/nvidia0");
  std::filesystem::remove(root + "/dev/nvidia2");
  EXPECT_EQ(VisibleNames(nullptr, root.c_str()), "error " + std::to_string(CUDA_ERROR_NO_DEVICE));
}

TEST(SimgpuState, ADifferentMachineSpecFailsCuInit) {
  PrivateState state("count=2,memory=8GiB");
  EXPECT_EQ(state.Stat()["devices"].size(), 2u);
  pid_t child = Spawn([] {
    setenv("SIMGPU_DEVICES", "count=1,memory=8GiB", 1);
    return cuInit(0) == CUDA_ERROR_OPERATING_SYSTEM ? 0 : 1;
  });
  EXPECT_EQ(Wait(child), 0);
  pid_t same = Spawn([] { return cuInit(0) == CUDA_SUCCESS ? 0 : 1; });
  EXPECT_EQ(Wait(same), 0);
}

}  // namespace
}  // namespace simgpu::testing
