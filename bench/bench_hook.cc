// bench_hook: what libtessera-cuda.so adds to the driver calls it sits in front of.
//
// Run without arguments it measures everything in one run: it starts itself as a Google Benchmark
// child without and with the library preloaded (a memory limit set, so the hooks do their full
// work), then 8 allocation workers at once in each setting, alternating the settings for a few
// rounds and keeping each figure's best round; it prints the added nanoseconds per call and the
// latency ratio against the targets. A third child runs the launch benchmark with a
// compute limit active and budget available: CUDA_DEVICE_SM_LIMIT=99 with busy_0us kernels
// launched between fixed host work (BM_cuLaunchKernelAmidHostWork, compared with the same loop
// without the library), so that the span charged per launch (a few hundred ns of launch latency
// on simgpu) stays well below 99% of the loop's time: the limiter charges every launch and never
// waits, its fast path. Targets are reported, not enforced: a missed one is marked MISSED and the
// exit code stays 0.
//
// Driver: simgpu (<build>/lib/simgpu) by default; TESSERA_BENCH_REAL_DRIVER=1 uses the system's
// libcuda.so.1 instead (the launch benchmark then needs TESSERA_BENCH_CUBIN, a module with a
// kernel named busy_0us, or it is skipped).
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "abi/cuda_driver.h"
#include "bench_children.h"
#include "bench_device.h"

namespace {

using tessera::bench::BenchmarkTimes;
using tessera::bench::Capture;
using tessera::bench::KeepMin;
using tessera::bench::OpenDevice;
using tessera::bench::Setting;

constexpr size_t kWorkerBytes = 256 << 20;
constexpr int kRounds = 3;

CUfunction LoadKernel() {
  static CUfunction function = [] {
    CUmodule module = nullptr;
    CUfunction f = nullptr;
    const char* cubin = std::getenv("TESSERA_BENCH_CUBIN");
    CUresult rc = cubin ? cuModuleLoad(&module, cubin) : cuModuleLoadData(&module, "simgpu");
    if (rc != CUDA_SUCCESS || cuModuleGetFunction(&f, module, "busy_0us") != CUDA_SUCCESS) {
      return static_cast<CUfunction>(nullptr);
    }
    return f;
  }();
  return function;
}

void BM_cuLaunchKernel(benchmark::State& state) {
  if (!OpenDevice()) return state.SkipWithError("no device");
  CUfunction f = LoadKernel();
  if (f == nullptr) return state.SkipWithError("no busy_0us kernel");
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
    if (++i % 1024 == 0) {
      state.PauseTiming();
      cuCtxSynchronize();
      state.ResumeTiming();
    }
  }
  cuCtxSynchronize();
}
BENCHMARK(BM_cuLaunchKernel);

// Host work between two launches, the same in every setting: about 0.6 us here, so that a loop
// iteration takes more than twice the span the limiter measures for a busy_0us launch (its launch
// latency, about 0.35 us on simgpu) and under a 99% limit the loop stays below its share.
void HostWork() {
  for (int i = 0; i < 2000; ++i) benchmark::DoNotOptimize(i);
}

// cuLaunchKernel between host work: with a limit active, every launch is charged and finds budget
// (the limiter's fast path). Back to back launches of busy_0us cannot show that on simgpu: the
// span charged per launch is the launch latency itself, so at 99% the limiter paces such a loop
// and its time is the pacing, not the limiter's cost.
void BM_cuLaunchKernelAmidHostWork(benchmark::State& state) {
  if (!OpenDevice()) return state.SkipWithError("no device");
  CUfunction f = LoadKernel();
  if (f == nullptr) return state.SkipWithError("no busy_0us kernel");
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
    HostWork();
    if (++i % 1024 == 0) {
      state.PauseTiming();
      cuCtxSynchronize();
      state.ResumeTiming();
    }
  }
  cuCtxSynchronize();
}
BENCHMARK(BM_cuLaunchKernelAmidHostWork);

void BM_cuMemAlloc_cuMemFree(benchmark::State& state) {
  tessera::bench::AllocFreePairs(state);
}
BENCHMARK(BM_cuMemAlloc_cuMemFree);

void BM_cuMemGetInfo(benchmark::State& state) {
  if (!OpenDevice()) return state.SkipWithError("no device");
  for (auto _ : state) {
    size_t free_bytes, total;
    benchmark::DoNotOptimize(cuMemGetInfo(&free_bytes, &total));
  }
}
BENCHMARK(BM_cuMemGetInfo);

// One of 8 workers: `iterations` allocations of 256 MiB (each freed), prints each one's latency.
// A few allocations before the common start warm both paths (the first allocation of a process
// costs tens of microseconds, with or without the library): the figure is the latency while all
// eight allocate, not start-up.
int AllocWorker(int iterations, int start_fd) {
  if (!OpenDevice()) return 1;
  for (int i = 0; i < 16; ++i) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, kWorkerBytes) != CUDA_SUCCESS) return 1;
    cuMemFree(p);
  }
  char go;
  if (read(start_fd, &go, 1) != 1) return 1;  // all workers start together
  std::vector<double> ns(iterations);
  for (int i = 0; i < iterations; ++i) {
    CUdeviceptr p = 0;
    auto t0 = std::chrono::steady_clock::now();
    CUresult rc = cuMemAlloc(&p, kWorkerBytes);
    auto t1 = std::chrono::steady_clock::now();
    if (rc != CUDA_SUCCESS) return 1;
    ns[i] = std::chrono::duration<double, std::nano>(t1 - t0).count();
    cuMemFree(p);
  }
  for (double v : ns) std::printf("%.1f\n", v);
  return 0;
}

// Allocation latency (ns) of 8 workers allocating at once: the median and the 99th percentile of
// all their allocations. The median is the figure compared with the target: with 8 processes on
// a machine of few cores, a worker preempted while it holds a lock (the driver's, or the region's)
// stalls the others for a scheduler tick, and those stalls, a handful per round, decide the mean
// (rounds of the same build differed by 5x).
struct Latency {
  double median = 0, p99 = 0;
};

Latency EightWorkers(const std::string& self, const Setting& setting) {
  int go[2];
  if (pipe(go) != 0) return {};
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      // Each worker allocates for a few milliseconds, so that all eight overlap on any machine.
      outputs[i] = Capture({self, "--alloc-worker", "500"}, setting, go[0]);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // workers initialise
  if (write(go[1], "gggggggg", 8) != 8) return {};
  for (auto& t : threads) t.join();
  close(go[0]);
  close(go[1]);
  std::vector<double> all;
  for (const auto& o : outputs) {
    if (o.empty()) return {};
    std::istringstream in(o);
    for (double v; in >> v;) all.push_back(v);
  }
  std::sort(all.begin(), all.end());
  return {all[all.size() / 2], all[all.size() * 99 / 100]};
}

// Mean start-up (ms) of 64 processes started at once: from the spawn of each to its exit after its
// first synchronised launch (compute_load startup), so the library's loading counts too.
double SixtyFourStartups(const std::string& compute_load, const Setting& setting) {
  constexpr int kProcesses = 64;
  std::vector<std::thread> threads;
  std::vector<double> ms(kProcesses, -1);
  for (int i = 0; i < kProcesses; ++i) {
    threads.emplace_back([&, i] {
      auto begin = std::chrono::steady_clock::now();
      if (Capture({compute_load, "startup"}, setting).empty()) return;
      ms[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                  .count();
    });
  }
  for (auto& t : threads) t.join();
  double sum = 0;
  for (double m : ms) {
    if (m < 0) return 0;
    sum += m;
  }
  return sum / kProcesses;
}

int Orchestrate(const std::vector<std::string>& extra) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::filesystem::path build = std::filesystem::path(self).parent_path().parent_path();
  std::string tmp = (std::filesystem::temp_directory_path() / "tessera-bench-XXXXXX").string();
  if (mkdtemp(tmp.data()) == nullptr) return 1;
  std::vector<std::string> common = {"SIMGPU_STATE=" + tmp + "/state",
                                     "SIMGPU_DEVICES=count=1,memory=64GiB"};
  const char* real = std::getenv("TESSERA_BENCH_REAL_DRIVER");
  if (!(real && std::string(real) == "1")) {
    common.push_back("LD_LIBRARY_PATH=" + (build / "lib/simgpu").string());
  }
  Setting plain{"plain", common};
  Setting hooked{"hooked", common};
  hooked.env.push_back("LD_PRELOAD=" + (build / "lib/libtessera-cuda.so").string());
  hooked.env.push_back("CUDA_DEVICE_MEMORY_LIMIT=48g");
  hooked.env.push_back("CUDA_DEVICE_MEMORY_SHARED_CACHE=" + tmp + "/region");
  Setting limited = hooked;
  limited.name = "limited";
  limited.env.push_back("CUDA_DEVICE_SM_LIMIT=99");
  Setting starting = hooked;  // start-up with the compute limiter on
  starting.name = "starting";
  starting.env.push_back("CUDA_DEVICE_SM_LIMIT=50");
  std::string compute_load = (build / "tests/compute_load").string();
  bool have_load = !real && std::filesystem::exists(compute_load);  // a simgpu test program

  // The machine may be shared: alternate the two settings a few rounds and keep each figure's
  // best (lowest) round, which is the least disturbed one.
  std::map<std::string, double> plain_times, hooked_times, limited_times;
  Latency plain8, hooked8;
  double plain64 = 0, starting64 = 0;
  auto min_positive = [](double a, double b) { return a <= 0 ? b : b <= 0 ? a : std::min(a, b); };
  for (int round = 0; round < kRounds; ++round) {
    KeepMin(plain_times, BenchmarkTimes(self, plain, extra));
    KeepMin(hooked_times, BenchmarkTimes(self, hooked, extra));
    KeepMin(limited_times,
            BenchmarkTimes(self, limited, {"--benchmark_filter=BM_cuLaunchKernelAmidHostWork"}));
    auto lower_median = [](Latency a, Latency b) {
      return a.median <= 0 || (b.median > 0 && b.median < a.median) ? b : a;
    };
    plain8 = lower_median(plain8, EightWorkers(self, plain));
    hooked8 = lower_median(hooked8, EightWorkers(self, hooked));
    if (have_load) {
      plain64 = min_positive(plain64, SixtyFourStartups(compute_load, plain));
      starting64 = min_positive(starting64, SixtyFourStartups(compute_load, starting));
    }
  }
  std::filesystem::remove_all(tmp);

  std::printf("\nlibtessera-cuda.so cost per call (ns, real time, %s driver, best of %d rounds)\n",
              real ? "real" : "simgpu", kRounds);
  std::printf("%-28s %12s %12s %12s %10s\n", "call", "without", "with", "added", "target");
  struct Row {
    const char* name;
    const char* benchmark;
    double target;
    std::map<std::string, double>* with;
  } rows[] = {{"cuLaunchKernel", "BM_cuLaunchKernel", 25, &hooked_times},
              {"cuLaunchKernel, SM limit", "BM_cuLaunchKernelAmidHostWork", 60, &limited_times},
              {"cuMemAlloc+cuMemFree", "BM_cuMemAlloc_cuMemFree", 300, &hooked_times},
              {"cuMemGetInfo", "BM_cuMemGetInfo", 0, &hooked_times}};
  int missed = 0;
  for (const auto& row : rows) {
    if (!plain_times.count(row.benchmark) || !row.with->count(row.benchmark)) {
      std::printf("%-28s %12s\n", row.name, "skipped");
      continue;
    }
    double a = plain_times[row.benchmark], b = (*row.with)[row.benchmark];
    std::string target = row.target > 0 ? "<= " + std::to_string(int(row.target)) : "-";
    bool over = row.target > 0 && b - a > row.target;
    missed += over;
    std::printf("%-28s %12.1f %12.1f %12.1f %10s%s\n", row.name, a, b, b - a, target.c_str(),
                over ? "  MISSED" : "");
  }
  if (plain8.median > 0 && hooked8.median > 0) {
    bool over = hooked8.median > 1.2 * plain8.median;
    missed += over;
    std::printf("%-28s %12.1f %12.1f %11.2fx %10s%s\n", "8-process 256 MiB alloc", plain8.median,
                hooked8.median, hooked8.median / plain8.median, "<= 1.2x", over ? "  MISSED" : "");
    std::printf("%-28s %12.1f %12.1f %11.2fx %10s\n", "  the same, p99", plain8.p99, hooked8.p99,
                hooked8.p99 / plain8.p99, "-");
  } else {
    std::printf("%-28s %12s\n", "8-process 256 MiB alloc", "failed");
  }
  if (plain64 > 0 && starting64 > 0) {
    bool over = starting64 - plain64 > 5.0;
    missed += over;
    std::printf("%-28s %12.2f %12.2f %12.2f %10s%s\n", "64 starts at once, ms", plain64, starting64,
                starting64 - plain64, "<= 5", over ? "  MISSED" : "");
  } else {
    std::printf("%-28s %12s\n", "64 starts at once, ms", have_load ? "failed" : "skipped");
  }
  std::printf("targets missed: %d\n", missed);
  return 0;  // targets are reported (MISSED above), not enforced through the exit code
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--alloc-worker") == 0) {
    return AllocWorker(std::atoi(argv[2]), 0);
  }
  if (argc >= 2 && std::strcmp(argv[1], "--child") == 0) {
    argv[1] = argv[0];
    int n = argc - 1;
    benchmark::Initialize(&n, argv + 1);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
  std::vector<std::string> extra(argv + 1, argv + argc);  // e.g. --benchmark_min_time=...
  return Orchestrate(extra);
}
