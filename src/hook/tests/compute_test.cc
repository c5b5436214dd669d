// Process tests of the compute (SM) limit: real multi-process programs (compute_load) run with
// libtessera-cuda.so preloaded over simgpu; each "container" is a shared region of its own with
// its own limit, all sharing one simulated GPU. Shares come from `simgpu stat`'s busy_ns_by_pid.
// Bounds are the ones issue 4 states. The device is time-sliced between contexts (2 ms), as a
// real GPU without MPS; Pairs runs pairs of containers on simgpu's FIFO mode as well (one kernel
// at a time in launch order). The tests are timing tests: CTest runs them RUN_SERIAL.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hook_env.h"

namespace tessera::hooktest {
namespace {

using std::chrono::milliseconds;

// The loads and the test agree on a start time on CLOCK_MONOTONIC, which is one clock for every
// process of the machine and never steps: a real-time clock stepped forward by NTP during a run
// (as on a CI runner) ended the loads at once and measured nothing.
int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

void SleepUntilMs(int64_t when) {
  int64_t now = MonotonicMs();
  if (when > now) std::this_thread::sleep_for(milliseconds(when - now));
}

// One container: its limit (0 = none) and mode, and the processes it runs.
struct Container {
  int percent = 0;
  std::string mode = "hard";
  int processes = 1;
  std::string path = "kernel";
  int ceiling = 0;  // elastic: the most it may use alone (0 = the whole device); a limits file
  int lead_ms = 0;  // starts this long before the others (its share is not measured then)
};

struct Shares {
  std::vector<double> first_second;  // busy fraction of each container over the first second
  std::vector<double> whole;         // over the whole run
  double stolen_first_second = 0;    // fraction of the machine's CPU time the host took then
  double stolen_whole = 0;
  double switched_whole = 0;  // fraction of the run the device spent switching contexts
};

// CPU time the hypervisor took from this machine so far (steal, /proc/stat, all CPUs), in ms; 0
// when unknown.
uint64_t StolenMs() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t v[8] = {};
  stat >> cpu;
  for (uint64_t& x : v) stat >> x;
  return v[7] * 1000 / static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
}

// Steal over a window of `ms` as a fraction of the CPU time the machine had in it.
double StolenFraction(uint64_t stolen_ms, double ms) {
  return static_cast<double>(stolen_ms) / (ms * static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN)));
}

// A run during which the host took this much CPU from the machine measured the host, not the
// limiter (a process that gets no CPU launches nothing, and its share of the device's time is
// lost): it is measured again, at most twice, and the least disturbed run is checked.
constexpr uint64_t kStolenLimitMs = 50;

// A share's bounds, in percent. The ceiling is `want + tolerance` whatever happened. The floor
// is `want - tolerance`, lowered by the share of the machine's CPU the host took during the
// window (in percent): while a process has no CPU it launches nothing, and when the containers
// book the whole device (hard 30 + 70) the device's time lost then is lost to them for good.
// On an undisturbed run the floor is the issue's.
void ExpectAtLeast(double share, double floor, double stolen, const char* window) {
  EXPECT_GE(100 * share, floor - 100 * stolen)
      << window << ": at least " << floor << "%, less the " << 100 * stolen
      << "% of the machine's CPU time the host took in the window";
}

void ExpectShare(double share, double want, double tolerance, double stolen, const char* window) {
  EXPECT_LE(100 * share, want + tolerance) << window;
  ExpectAtLeast(share, want - tolerance, stolen, window);
}

// A share beside a neighbour when the two book the whole device: the ceiling as above, the
// floor `tolerance` under the smaller of `want` and what the neighbour and the device's context
// switches left. Each switch between two busy contexts leaves the device idle (simgpu's
// `switch`, about 157 us on an H200), time that neither gets and that no limiter of launches can
// give back (gpu-check's WithinBeside, docs/compute-limit.md).
void ExpectShareBeside(double share, double want, double tolerance, double neighbour,
                       double switched, double stolen, const char* window) {
  EXPECT_LE(100 * share, want + tolerance) << window;
  const double left = 100 * (1 - neighbour - switched);
  EXPECT_GE(100 * share, std::min(want, left) - tolerance - 100 * stolen)
      << window << ": at least " << tolerance << " points under the smaller of " << want
      << "% and the " << left << "% the neighbour and the context switches (" << 100 * switched
      << "%) left, less the " << 100 * stolen
      << "% of the machine's CPU time the host took in the window";
}

constexpr const char* kWhole = "over the whole run";
constexpr const char* kFirst = "over the first second";
constexpr const char* kAfterFirst = "from the second second on";

// Container `i`'s share from the second second to the end of a run of `seconds`, and the stolen
// share then: for bounds that hold once NVML's samples have corrected the estimates (the
// limiter's loop steps from NVML's first samples on, docs/compute-limit.md).
struct AfterFirst {
  double share, stolen;
};
AfterFirst AfterFirstSecond(const Shares& s, size_t i, double seconds) {
  return {(s.whole[i] * seconds - s.first_second[i]) / (seconds - 1),
          (s.stolen_whole * seconds - s.stolen_first_second) / (seconds - 1)};
}

// simgpu's machine with its defaults: a real GPU's imperfections (kernel-time jitter and drift,
// NVML sampling one process per instant and context switches of 157 us, as an H200; a context's
// streams overlapping, events stamped when the device runs the context; docs/simgpu.md).
constexpr const char* kDevice = "count=1,memory=16GiB";

// The machine the cases run on: kDevice, and the simgpu keys in TESSERA_COMPUTE_TEST_DEVICES
// when set, to measure the matrix on other imperfections (`nvml=one,switch=157us`, an H200's:
// docs/compute-limit.md, "One process per instant").
std::string Device() {
  const char* more = std::getenv("TESSERA_COMPUTE_TEST_DEVICES");
  return more != nullptr && more[0] != '\0' ? std::string(kDevice) + "," + more : kDevice;
}
constexpr int kSliceUs = 2000;  // its time slice (simgpu's default)

class ComputeTest : public ::testing::Test {
 protected:
  // Runs the containers for `seconds` with `kernel_us` kernels and returns their shares.
  Shares Run(const std::vector<Container>& containers, int kernel_us, double seconds) {
    return Run(containers, std::to_string(kernel_us), seconds);
  }

  // As above with compute_load's `kernel` (N, gridN, mixedN, manyN: kernels of N us on average).
  Shares Run(const std::vector<Container>& containers, const std::string& kernel, double seconds) {
    Shares best;
    uint64_t least = UINT64_MAX;
    for (int attempt = 0; attempt < 3 && least >= kStolenLimitMs; ++attempt) {
      uint64_t stolen = 0;
      Shares shares = RunOnce(containers, kernel, seconds, attempt, &stolen);
      if (stolen >= kStolenLimitMs) {
        std::printf(
            "the host took %llu ms of CPU from this machine during the run (steal, %.1f%%)\n",
            static_cast<unsigned long long>(stolen), 100 * shares.stolen_whole);
      }
      if (stolen < least) {
        least = stolen;
        best = std::move(shares);
      }
    }
    return best;  // the run the host disturbed least
  }

  // One run; `attempt` names its regions and limits files (a new run starts from fresh ones).
  // `stolen` receives the steal over the measured window, in ms.
  Shares RunOnce(const std::vector<Container>& containers, const std::string& kernel,
                 double seconds, int attempt, uint64_t* stolen) {
    const int kernel_us = std::atoi(kernel.c_str() + kernel.find_first_of("0123456789"));
    const int sync_every = kernel_us >= 1000 ? 4 : 16;
    const int64_t start = MonotonicMs() + 2500;
    std::vector<std::unique_ptr<Child>> children;
    std::vector<int> owner;
    for (size_t c = 0; c < containers.size(); ++c) {
      Env env = hook.ProbeEnv(devices_);
      const std::string name = std::to_string(attempt) + "-" + std::to_string(c);
      env["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = hook.dir() + "/region-" + name;
      if (containers[c].ceiling > 0) {  // only the limits file has ceilings
        env["TESSERA_LIMITS_FILE"] = hook.WriteLimits(
            "limits-" + name, "version=2\nmode=" + containers[c].mode + "\ndevices=1\nmemory.0=0" +
                                  "\ncores.0=" + std::to_string(containers[c].percent) +
                                  "\nceiling.0=" + std::to_string(containers[c].ceiling) +
                                  "\nregion=" + env["CUDA_DEVICE_MEMORY_SHARED_CACHE"] + "\n");
      } else if (containers[c].percent > 0) {
        env["CUDA_DEVICE_SM_LIMIT"] = std::to_string(containers[c].percent);
        env["TESSERA_CORE_MODE"] = containers[c].mode;
      }
      for (int p = 0; p < containers[c].processes; ++p) {
        children.push_back(std::make_unique<Child>(
            std::vector<std::string>{hook.build_dir() + "/tests/compute_load", containers[c].path,
                                     kernel, std::to_string(sync_every),
                                     std::to_string(start - containers[c].lead_ms),
                                     std::to_string(seconds + containers[c].lead_ms / 1000.0)},
            env));
        owner.push_back(static_cast<int>(c));
      }
    }
    std::vector<std::string> pids;
    for (auto& child : children) {
      EXPECT_TRUE(child->WaitForLine("ready", milliseconds(20000))) << "a load did not start";
      pids.push_back(std::to_string(child->pid()));
    }
    EXPECT_LT(MonotonicMs(), start) << "the loads took over 2.5 s to start";

    SleepUntilMs(start);
    const uint64_t stolen_at_start = StolenMs();
    const nlohmann::json at_start = hook.Stat(devices_);
    SleepUntilMs(start + 1000);
    int64_t before = MonotonicMs();
    nlohmann::json first = hook.Stat(devices_);
    const uint64_t stolen_at_first = StolenMs();
    double first_window_s = ((before + MonotonicMs()) / 2.0 - start) / 1000.0;
    for (auto& child : children) {
      EXPECT_EQ(child->Wait(milliseconds(static_cast<int64_t>(seconds * 1000) + 30000)), 0);
    }
    nlohmann::json last = hook.Stat(devices_);
    *stolen = StolenMs() - stolen_at_start;
    const double switched_ns = last["devices"][0].value("switched_ns", 0.0) -
                               at_start["devices"][0].value("switched_ns", 0.0);

    Shares shares;
    shares.stolen_first_second =
        StolenFraction(stolen_at_first - stolen_at_start, first_window_s * 1000);
    shares.stolen_whole = StolenFraction(*stolen, seconds * 1000);
    shares.switched_whole = switched_ns / 1e9 / seconds;
    shares.first_second.assign(containers.size(), 0);
    shares.whole.assign(containers.size(), 0);
    for (size_t i = 0; i < children.size(); ++i) {
      const std::string& pid = pids[i];
      const auto& by_pid_first = first["devices"][0]["busy_ns_by_pid"];
      const auto& by_pid_last = last["devices"][0]["busy_ns_by_pid"];
      if (by_pid_first.contains(pid)) {
        shares.first_second[owner[i]] += by_pid_first[pid].get<double>() / 1e9 / first_window_s;
      }
      if (by_pid_last.contains(pid)) {
        shares.whole[owner[i]] += by_pid_last[pid].get<double>() / 1e9 / seconds;
      }
    }
    std::printf("context switches: %.1f%% of the run\n", 100 * shares.switched_whole);
    for (size_t c = 0; c < containers.size(); ++c) {
      std::printf("container %zu (%d%% %s, %s x%d, %s): first second %.1f%%, whole run %.1f%%\n", c,
                  containers[c].percent, containers[c].mode.c_str(), containers[c].path.c_str(),
                  containers[c].processes, kernel.c_str(), 100 * shares.first_second[c],
                  100 * shares.whole[c]);
    }
    return shares;
  }

  HookEnv hook;
  std::string devices_ = Device();
};

// Seconds a run lasts. Issue 17's runs were 4 s; on a real GPU's imperfections the limiter's
// loop settles within a second or two of NVML's first samples, and a 4 s run weighed that
// transient at a quarter of its share (docs/compute-limit.md, "Measured shares").
constexpr double kRun = 8.0;

// A hard container alone at `percent`: within 3 points over the run, 5 in its first second.
void ExpectHardAlone(const Shares& s, int percent) {
  ExpectShare(s.whole[0], percent, 3.0, s.stolen_whole, kWhole);
  ExpectShare(s.first_second[0], percent, 5.0, s.stolen_first_second, kFirst);
}

// --- one container alone, hard -------------------------------------------------------------

class HardAlone : public ComputeTest, public ::testing::WithParamInterface<std::tuple<int, int>> {};

TEST_P(HardAlone, BusyFractionTracksTheLimit) {
  auto [percent, kernel_us] = GetParam();
  ExpectHardAlone(Run({{.percent = percent}}, kernel_us, kRun), percent);
}

INSTANTIATE_TEST_SUITE_P(Limits, HardAlone,
                         ::testing::Combine(::testing::Values(10, 25, 50, 75),
                                            ::testing::Values(20, 2000)),
                         [](const auto& info) {
                           return "P" + std::to_string(std::get<0>(info.param)) + "_K" +
                                  std::to_string(std::get<1>(info.param)) + "us";
                         });

// --- contention and elastic ------------------------------------------------------------------

class Kernels : public ComputeTest, public ::testing::WithParamInterface<int> {};

std::string KernelName(const ::testing::TestParamInfo<int>& info) {
  return "K" + std::to_string(info.param) + "us";
}

TEST_P(Kernels, ElasticThirtyAloneUsesTheIdleDevice) {
  Shares s = Run({{.percent = 30, .mode = "elastic"}}, GetParam(), kRun);
  ExpectAtLeast(s.whole[0], 90, s.stolen_whole, kWhole);
}

// vcuda's tencent.com/vcuda-core-limit: elastic, but never above the ceiling.
TEST_P(Kernels, ElasticThirtyAloneStopsAtItsCeiling) {
  Shares s = Run({{.percent = 30, .mode = "elastic", .ceiling = 60}}, GetParam(), kRun);
  ExpectShare(s.whole[0], 60, 3.0, s.stolen_whole, kWhole);
}

TEST_P(Kernels, ElasticThirtyAgainstAnUnlimitedNeighbour) {
  Shares s = Run({{.percent = 30, .mode = "elastic"}, {.percent = 0}}, GetParam(), kRun);
  ExpectAtLeast(s.whole[0], 27, s.stolen_whole, kWhole);
}

// The neighbour's queue is full from the container's first launch on: no span the library times
// is ever its kernel's alone, so only NVML's samples of its processes show the estimates' error.
// The loop needs NVML's first samples to step (docs/compute-limit.md): the bound holds
// from the second second on.
TEST_P(Kernels, ElasticThirtyAgainstANeighbourSaturatingFromItsFirstLaunch) {
  Shares s =
      Run({{.percent = 30, .mode = "elastic"}, {.percent = 0, .lead_ms = 500}}, GetParam(), kRun);
  AfterFirst after = AfterFirstSecond(s, 0, kRun);
  ExpectAtLeast(after.share, 27, after.stolen, kAfterFirst);
}

// A hard container gets its share from NVML's samples too (the loop), and never more than its
// percent, whatever the neighbour does. As for the elastic container, the loop needs NVML's
// first samples to step.
TEST_P(Kernels, HardThirtyAgainstANeighbourSaturatingFromItsFirstLaunch) {
  Shares s = Run({{.percent = 30}, {.percent = 0, .lead_ms = 500}}, GetParam(), kRun);
  AfterFirst after = AfterFirstSecond(s, 0, kRun);
  ExpectShare(after.share, 30, 3.0, after.stolen, kAfterFirst);
  EXPECT_LE(100 * s.first_second[0], 35.0) << kFirst;
}

TEST_P(Kernels, AllGraphWorkObeysTheHardLimit) {
  ExpectHardAlone(Run({{.percent = 25, .path = "graph"}}, GetParam(), kRun), 25);
}

// PyTorch captures graphs in global mode while its NCCL watchdog queries events: the driver then
// refuses every call a capture forbids, from any thread, and invalidates the capture. The
// limiter's sampler makes none while a capture is active, so the capture completes (it failed
// before) and the graph runs at the share.
TEST_P(Kernels, GraphCapturedWhileAnotherThreadLaunchesRunsAtTheShare) {
  Shares s = Run({{.percent = 30, .path = "graph_busy"}}, GetParam(), kRun);
  ExpectShare(s.whole[0], 30, 3.0, s.stolen_whole, kWhole);
}

TEST_P(Kernels, FourProcessesShareOneBudget) {
  Shares s = Run({{.percent = 40, .processes = 4}}, GetParam(), kRun);
  ExpectShare(s.whole[0], 40, 3.0, s.stolen_whole, kWhole);
}

// A kernel's time follows its launch's size (elementwise, GEMM, attention): a launch is charged
// what a launch of its shape takes, not its function's smallest launch.
TEST_P(Kernels, HardThirtyOverLaunchesOfManySizes) {
  ExpectHardAlone(Run({{.percent = 30}}, "grid" + std::to_string(GetParam()), kRun), 30);
}

// torch.compile, Triton autotuning and a large model's libraries launch thousands of distinct
// kernels: more than the limiter keeps estimates for. Every launch is still charged (1,024 were
// kept before, and the others went free: 50% of the device at a 30% limit).
TEST_P(Kernels, HardThirtyOverTwoThousandDistinctFunctions) {
  Shares s = Run({{.percent = 30}}, "many" + std::to_string(GetParam()), kRun);
  ExpectShare(s.whole[0], 30, 3.0, s.stolen_whole, kWhole);
}

// Cases of what a real GPU does that issue 17's matrix did not have (issue 29).
class RealGpu : public ComputeTest, public ::testing::WithParamInterface<int> {};

// Persistent kernels (cuBLAS/CUTLASS 3 GEMMs, FlashAttention-3, Triton persistent matmuls) launch
// one block per SM whatever the problem's size: one key covers launches of many lengths, and its
// estimate, the mean of its spans, follows their mix (a minimum picks the shortest).
TEST_P(RealGpu, HardThirtyOverArgumentScaledKernels) {
  ExpectHardAlone(Run({{.percent = 30}}, "work" + std::to_string(GetParam()), kRun), 30);
}

// A container's own streams run together (simgpu's `streams=concurrent`, as a real context's):
// their spans overlap and add up to more than the device time they take.
TEST_P(RealGpu, HardThirtyOnTwoStreams) {
  Shares s = Run({{.percent = 30, .path = "kernel2s"}}, GetParam(), kRun);
  ExpectShare(s.whole[0], 30, 3.0, s.stolen_whole, kWhole);
}

TEST_P(RealGpu, ElasticThirtyAloneOnTwoStreamsUsesTheIdleDevice) {
  Shares s = Run({{.percent = 30, .mode = "elastic", .path = "kernel2s"}}, GetParam(), kRun);
  ExpectAtLeast(s.whole[0], 90, s.stolen_whole, kWhole);
}

INSTANTIATE_TEST_SUITE_P(Sizes, Kernels, ::testing::Values(20, 2000), KernelName);

// Pairs of containers, on both of simgpu's schedules: time-sliced (a real GPU without MPS) and
// FIFO (one kernel at a time from all processes in launch order).
class Pairs : public ComputeTest,
              public ::testing::WithParamInterface<std::tuple<std::string, int>> {
 protected:
  Pairs() { devices_ = Device() + ",sched=" + std::get<0>(GetParam()); }
  int Size() const { return std::get<1>(GetParam()); }
  bool TimeSliced() const { return std::get<0>(GetParam()) == "timeslice"; }
};

std::string PairName(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  return std::get<0>(info.param) + "_K" + std::to_string(std::get<1>(info.param)) + "us";
}

// A pair that books the whole device: each container within `within` points of its share from
// the second second on (the floor under what the other and the context switches left), and
// neither above its ceiling over the whole run. Each container's first spans hold the other's
// work (its slices, or on FIFO its queue) until the limiter's loop has stepped on NVML's first
// samples, and elastic containers start free until NVML shows the contention: the first second
// is checked by each test as it can be held (docs/compute-limit.md, Known limits).
void ExpectThirtySeventy(const Shares& s, double within) {
  const AfterFirst thirty = AfterFirstSecond(s, 0, kRun), seventy = AfterFirstSecond(s, 1, kRun);
  ExpectShareBeside(thirty.share, 30, within, seventy.share, s.switched_whole, thirty.stolen,
                    kAfterFirst);
  ExpectShareBeside(seventy.share, 70, within, thirty.share, s.switched_whole, seventy.stolen,
                    kAfterFirst);
  EXPECT_LE(100 * s.whole[0], 30 + within) << kWhole;
  EXPECT_LE(100 * s.whole[1], 70 + within) << kWhole;
}

// How far under its share a hard container may start beside a busy neighbour, time-sliced: within
// 10 points in its first second, or 15 where its kernels are as long as a slice. Such a kernel
// is preempted at the slice's end whenever the neighbour has work and resumed after the
// neighbour's slice, so its spans hold that slice, its estimates start 1.5 to 2 times its time,
// and it runs under its share until the limiter's loop has stepped on NVML's first samples
// (0.2-0.4 s) and their half-second window has followed (docs/compute-limit.md, Known limits:
// 16.9-21.6% in the first second for 2 ms kernels beside a busy neighbour on simgpu's defaults).
// No span the library can time tells a kernel's time from a slice it was switched out for.
double FirstSecondTolerance(int kernel_us, int slice_us) {
  return kernel_us >= slice_us ? 15.0 : 10.0;
}

// A hard pair: as ExpectThirtySeventy, and the 30% container's first second within `first`
// points when time-sliced. On FIFO every span holds the neighbour's whole queue, twenty times a
// 20 us kernel, and the first second can be a few percent (5-16%): FIFO is no real GPU's
// schedule without MPS, and only the run is checked there.
void ExpectHardThirtySeventy(const Shares& s, bool time_sliced, double first) {
  ExpectThirtySeventy(s, 3.0);
  if (time_sliced) ExpectShare(s.first_second[0], 30, first, s.stolen_first_second, kFirst);
}

TEST_P(Pairs, HardThirtyAgainstHardSeventy) {
  ExpectHardThirtySeventy(Run({{.percent = 30}, {.percent = 70}}, Size(), kRun), TimeSliced(),
                          FirstSecondTolerance(Size(), kSliceUs));
}

// Both containers start free (an elastic container is held only while the device is
// contended) and are held from the poll that sees the contention in NVML's samples (about 0.2 s
// in), so the first second is not checked: 31.9-43.5% for the 30% container on simgpu's
// defaults, both modes; on FIFO the 30% container's first spans hold the other's whole queue and
// it can get 5% (docs/compute-limit.md, Known limits).
TEST_P(Pairs, ElasticThirtyAgainstElasticSeventy) {
  Shares s =
      Run({{.percent = 30, .mode = "elastic"}, {.percent = 70, .mode = "elastic"}}, Size(), kRun);
  ExpectThirtySeventy(s, 3.0);
}

// A graph is timed as one unit; time-sliced, a graph of 4 kernels of 2 ms spans the neighbour's
// slices whenever the neighbour has work, so every span holds them (20-24% for the 30% container
// before hard limits were corrected by NVML's samples). Until the loop has stepped (about half
// a second) the graph container is charged those spans: its share is checked from the second
// second on, and never above its percent.
TEST_P(Pairs, AllGraphWorkAgainstAHardNeighbour) {
  Shares s = Run({{.percent = 30, .path = "graph"}, {.percent = 70}}, Size(), kRun);
  ExpectThirtySeventy(s, 3.0);
}

// Each container's small and large launches of one function: the samples must reach both keys
// (timing only the one after the budget wait left the other at its first estimate: 16-17% for the
// 30% container in some runs). Time-sliced, a 4 ms launch is preempted at the 2 ms slice and
// every span of it can hold the neighbour's slice (20% in a clean-clone run before hard limits
// were corrected by NVML's samples).
TEST_P(Pairs, HardThirtyAgainstHardSeventyWithLaunchesOfManySizes) {
  ExpectHardThirtySeventy(
      Run({{.percent = 30}, {.percent = 70}}, "grid" + std::to_string(Size()), kRun), TimeSliced(),
      FirstSecondTolerance(2 * Size() - 1, kSliceUs));
}

TEST_P(Pairs, HardThirtyAgainstHardSeventyWithFixedAndSizedKernels) {
  ExpectHardThirtySeventy(
      Run({{.percent = 30}, {.percent = 70}}, "mixed" + std::to_string(Size()), kRun), TimeSliced(),
      FirstSecondTolerance(2 * Size() - 1, kSliceUs));
}

// A neighbour without a limit that always has work queued: time-sliced, it delays the
// container's kernels by at most the rest of its slice, as on a real GPU, and the container gets
// its share (issue 17's bound). On FIFO every span holds the neighbour's queue, and the first
// estimates fall slowly: there the container gets less (Known limits), but never more.
TEST_P(Pairs, HardThirtyAgainstAnUnlimitedNeighbour) {
  Shares s = Run({{.percent = 30}, {.percent = 0}}, Size(), kRun);
  if (TimeSliced()) {
    ExpectShare(s.whole[0], 30, 3.0, s.stolen_whole, kWhole);
    ExpectShare(s.first_second[0], 30, FirstSecondTolerance(Size(), kSliceUs),
                s.stolen_first_second, kFirst);
  }
  EXPECT_LE(100 * s.whole[0], 33.0) << kWhole;
  EXPECT_LE(100 * s.first_second[0], 35.0) << kFirst;
}

INSTANTIATE_TEST_SUITE_P(Sizes, Pairs,
                         ::testing::Combine(::testing::Values("timeslice", "fifo"),
                                            ::testing::Values(20, 2000)),
                         PairName);

// The time slice is the driver's setting (`nvidia-smi compute-policy --set-timeslice`), not a
// constant: reports range from 1 ms to 30 ms. The pairs above at 2 ms; here at 1 and 10 ms.
class TimeSlices : public ComputeTest,
                   public ::testing::WithParamInterface<std::tuple<std::string, int>> {
 protected:
  TimeSlices() { devices_ = Device() + ",timeslice=" + std::get<0>(GetParam()); }
  int Size() const { return std::get<1>(GetParam()); }
  int SliceUs() const { return std::atoi(std::get<0>(GetParam()).c_str()) * 1000; }
};

TEST_P(TimeSlices, HardThirtyAgainstHardSeventy) {
  ExpectHardThirtySeventy(Run({{.percent = 30}, {.percent = 70}}, Size(), kRun), true,
                          FirstSecondTolerance(Size(), SliceUs()));
}

TEST_P(TimeSlices, HardThirtyAgainstAnUnlimitedNeighbour) {
  Shares s = Run({{.percent = 30}, {.percent = 0}}, Size(), kRun);
  ExpectShare(s.whole[0], 30, 3.0, s.stolen_whole, kWhole);
  ExpectShare(s.first_second[0], 30, FirstSecondTolerance(Size(), SliceUs()), s.stolen_first_second,
              kFirst);
}

INSTANTIATE_TEST_SUITE_P(Slices, TimeSlices,
                         ::testing::Combine(::testing::Values("1ms", "10ms"),
                                            ::testing::Values(20, 2000)),
                         [](const auto& info) {
                           return "slice" + std::get<0>(info.param) + "_K" +
                                  std::to_string(std::get<1>(info.param)) + "us";
                         });

// Persistent kernels in both containers of a hard pair, time-sliced.
TEST_P(RealGpu, HardThirtyAgainstHardSeventyWithArgumentScaledKernels) {
  ExpectHardThirtySeventy(
      Run({{.percent = 30}, {.percent = 70}}, "work" + std::to_string(GetParam()), kRun), true,
      FirstSecondTolerance(GetParam() * 3 / 2, kSliceUs));
}

INSTANTIATE_TEST_SUITE_P(Sizes, RealGpu, ::testing::Values(20, 2000), KernelName);

// --- every launch path is governed ----------------------------------------------------------

class LaunchPath : public ComputeTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(LaunchPath, IsGoverned) {
  Shares s = Run({{.percent = 50, .path = GetParam()}}, 2000, 2.0);
  ExpectShare(s.whole[0], 50, 5.0, s.stolen_whole, kWhole);
}

INSTANTIATE_TEST_SUITE_P(Paths, LaunchPath,
                         ::testing::Values("kernel_ptsz", "ex", "ex_ptsz", "coop", "coop_ptsz",
                                           "multi", "launch", "grid", "grid_async", "graph_ptsz",
                                           "runtime"));

// --- resized while it runs (issue 36) ------------------------------------------------------

// A container's busy fraction, and the share of the machine's CPU the host took, over the windows
// of a run whose limit changes: from its second second to the switch, the first second after the
// switch, and from then to the end.
struct Resized {
  double before = 0, first_after = 0, after = 0;
  double stolen_before = 0, stolen_first_after = 0, stolen_after = 0;
  uint64_t stolen_ms = 0;  // over the whole run
};

// A container's compute limit as its limits file writes it.
struct FileLimit {
  int percent;
  int ceiling = 0;  // 0: none
  std::string Keys() const {
    return "cores.0=" + std::to_string(percent) +
           (ceiling > 0 ? "\nceiling.0=" + std::to_string(ceiling) : "") + "\n";
  }
  std::string Name() const {
    return std::to_string(percent) + "%" +
           (ceiling > 0 ? " (ceiling " + std::to_string(ceiling) + "%)" : "");
  }
};

class ResizedWhileRunning : public ComputeTest {
 protected:
  // One container of one process in `mode`, `kernel_us` kernels, its limits file at `from` and
  // replaced as the node agent replaces it (a whole file renamed into place) with `to` `switch_s`
  // into a run of `seconds`. The least disturbed of up to three runs, as Run does.
  Resized RunResized(const std::string& mode, FileLimit from, FileLimit to, int kernel_us,
                     double switch_s, double seconds) {
    Resized best;
    best.stolen_ms = UINT64_MAX;
    for (int attempt = 0; attempt < 3 && best.stolen_ms >= kStolenLimitMs; ++attempt) {
      Resized r = RunResizedOnce(mode, from, to, kernel_us, switch_s, seconds, attempt);
      if (r.stolen_ms < best.stolen_ms) best = r;
    }
    return best;
  }

 private:
  Resized RunResizedOnce(const std::string& mode, FileLimit from, FileLimit to, int kernel_us,
                         double switch_s, double seconds, int attempt) {
    const std::string name = "resized-" + std::to_string(attempt);
    Env env = hook.ProbeEnv(devices_);
    const std::string region = hook.dir() + "/region-" + name;
    const std::string limits = hook.dir() + "/limits-" + name;
    auto body = [&](const FileLimit& limit) {
      return "version=2\nmode=" + mode + "\ndevices=1\nmemory.0=0\n" + limit.Keys() +
             "region=" + region + "\n";
    };
    env["TESSERA_LIMITS_FILE"] = hook.WriteLimits("limits-" + name, body(from));
    const int64_t start = MonotonicMs() + 2500;
    Child load({hook.build_dir() + "/tests/compute_load", "kernel", std::to_string(kernel_us),
                std::to_string(kernel_us >= 1000 ? 4 : 16), std::to_string(start),
                std::to_string(seconds)},
               env);
    EXPECT_TRUE(load.WaitForLine("ready", milliseconds(20000))) << "the load did not start";
    EXPECT_LT(MonotonicMs(), start) << "the load took over 2.5 s to start";
    const std::string pid = std::to_string(load.pid());
    // The load's busy time and the host's steal at a moment of the run.
    struct Mark {
      double busy_s = 0, at_ms = 0;
      uint64_t stolen_ms = 0;
    };
    auto mark = [&] {
      Mark m;
      const int64_t before = MonotonicMs();
      const nlohmann::json stat = hook.Stat(devices_);
      m.at_ms = (before + MonotonicMs()) / 2.0;
      m.stolen_ms = StolenMs();
      const auto& by_pid = stat["devices"][0]["busy_ns_by_pid"];
      if (by_pid.contains(pid)) m.busy_s = by_pid[pid].get<double>() / 1e9;
      return m;
    };
    SleepUntilMs(start + 1000);
    const Mark second = mark();
    const int64_t switch_at = start + static_cast<int64_t>(switch_s * 1000);
    SleepUntilMs(switch_at);
    const Mark switched = mark();
    const std::string text = body(to) + "end=" + std::to_string(body(to).size()) + "\n";
    std::ofstream(limits + ".tmp") << text;
    std::filesystem::rename(limits + ".tmp", limits);
    SleepUntilMs(switch_at + 1000);
    const Mark first_after = mark();
    EXPECT_EQ(load.Wait(milliseconds(static_cast<int64_t>(seconds * 1000) + 30000)), 0);
    Mark end = mark();
    end.at_ms = static_cast<double>(start) + seconds * 1000;  // the load stops then
    auto share = [](const Mark& a, const Mark& b) {
      return (b.busy_s - a.busy_s) / ((b.at_ms - a.at_ms) / 1000);
    };
    auto stolen = [](const Mark& a, const Mark& b) {
      return StolenFraction(b.stolen_ms - a.stolen_ms, b.at_ms - a.at_ms);
    };
    Resized r;
    r.before = share(second, switched);
    r.first_after = share(switched, first_after);
    r.after = share(first_after, end);
    r.stolen_before = stolen(second, switched);
    r.stolen_first_after = stolen(switched, first_after);
    r.stolen_after = stolen(first_after, end);
    r.stolen_ms = end.stolen_ms - second.stolen_ms;
    std::printf(
        "%s %s -> %s at %.1f s, %d us kernels: %.1f%% before, %.1f%% in the first second after, "
        "%.1f%% from then on\n",
        mode.c_str(), from.Name().c_str(), to.Name().c_str(), switch_s, kernel_us, 100 * r.before,
        100 * r.first_after, 100 * r.after);
    return r;
  }
};

// The node agent raises a running container's compute limit: from the switch on it runs at the
// new percent, within the bounds of a container started at it (3 points once settled, 5 in its
// first second), without a restart. The loop keeps its gain and reads nothing measured under the
// old percent (docs/compute-limit.md, "Resizing").
TEST_F(ResizedWhileRunning, HardThirtyRaisedToSixtyRunsAtSixty) {
  Resized r = RunResized("hard", {30}, {60}, 20, 2.5, 6.0);
  ExpectShare(r.before, 30, 3.0, r.stolen_before, "from the second second to the switch");
  ExpectShare(r.first_after, 60, 5.0, r.stolen_first_after, "over the first second after it");
  ExpectShare(r.after, 60, 3.0, r.stolen_after, "from then on");
}

// And lowers it: the same bounds at the lower percent.
TEST_F(ResizedWhileRunning, HardSixtyLoweredToThirtyRunsAtThirty) {
  Resized r = RunResized("hard", {60}, {30}, 20, 2.5, 6.0);
  ExpectShare(r.before, 60, 3.0, r.stolen_before, "from the second second to the switch");
  ExpectShare(r.first_after, 30, 5.0, r.stolen_first_after, "over the first second after it");
  ExpectShare(r.after, 30, 3.0, r.stolen_after, "from then on");
}

// An elastic container alone runs at its ceiling (vcuda's core limit); a raised ceiling holds
// from the next launch on, with the bounds of ElasticThirtyAloneStopsAtItsCeiling (3 points).
TEST_F(ResizedWhileRunning, ElasticThirtyAloneFollowsARaisedCeiling) {
  Resized r = RunResized("elastic", {30, 40}, {30, 70}, 20, 2.5, 6.0);
  ExpectShare(r.before, 40, 3.0, r.stolen_before, "from the second second to the switch");
  ExpectShare(r.first_after, 70, 3.0, r.stolen_first_after, "over the first second after it");
  ExpectShare(r.after, 70, 3.0, r.stolen_after, "from then on");
}

// --- start-up ---------------------------------------------------------------------------------

// 64 processes of one container starting at once under a limit: each starts, launches and is
// governed, with no start-up probing that could serialise them. What they add to their start-up
// (issue 4: at most 5 ms each) is a speed figure, measured by bench_hook ("64 starts at once").
TEST_F(ComputeTest, SixtyFourProcessesStartingAtOnceAllRun) {
  // An H200's memory: 64 contexts of 518 MiB (kDevices' cost) would not fit kDevices' 16 GiB.
  Env limited = hook.ProbeEnv("count=1,memory=141GiB,ctxmem=518MiB");
  limited["CUDA_DEVICE_SM_LIMIT"] = "50";
  std::vector<RunResult> results(64);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = RunProgram({hook.build_dir() + "/tests/compute_load", "startup"}, limited,
                              milliseconds(120000));
    });
  }
  for (auto& thread : threads) thread.join();
  for (const RunResult& r : results) {
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_NE(r.out.find("startup_us "), std::string::npos) << r.Describe();
  }
}

}  // namespace
}  // namespace tessera::hooktest
