// bench_spill: what spilling GPU memory to host memory costs (issue 33), on simgpu.
//
// Run without arguments it prints two sets of figures:
// - the slowdown of a kernel over spilled memory: a `touch_<N>ns` kernel (simgpu's kernel that
//   reads a range of memory, docs/simgpu.md) over a 32 MiB buffer the device holds and over one
//   the library served from host memory, in one process under the library with spilling on, on a
//   small simulated GPU (256 MiB free beside its context) that the process fills until an
//   allocation spills. Both are timed with events and with the host clock (median of 10). The
//   ratio follows simgpu's `hostslow=` setting, which is printed beside it (read back from
//   `simgpu stat`): on simgpu it measures that the spilled buffer is the host memory the model
//   charges, not a property of a GPU;
// - the cost of the allocation path: cuMemAlloc+cuMemFree of 2 MiB without the library, with it
//   and spilling off (no `spill.0` in the limits file), with it and spilling on while the device
//   has room (the 300 ns target for the added cost), and with it while every allocation
//   spills (pinned host memory from cuMemHostAlloc, its pages written in, and the library's check
//   of the host's and the cgroup's free memory before each). Google Benchmark children, 3
//   repetitions each (their median), best of 3 rounds.
// Figures only: nothing is judged, and the exit code is 0 unless a measurement could not be made.
//
// Driver: simgpu (<build>/lib/simgpu) only; the touch kernel and the small device are simgpu's.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "abi/cuda_driver.h"
#include "bench_children.h"
#include "bench_device.h"

namespace {

using tessera::bench::BenchmarkTimes;
using tessera::bench::Capture;
using tessera::bench::kAllocBytes;
using tessera::bench::KeepMin;
using tessera::bench::OpenDevice;
using tessera::bench::Setting;

// 774 MiB, of which a context takes 518 MiB: 256 MiB for the benchmark's allocations.
constexpr char kDevice[] = "count=1,memory=774MiB,ctxmem=518MiB";
constexpr size_t kBufferBytes = 32 << 20;
constexpr char kKernel[] = "touch_10000ns";  // 10 us per MiB of device memory
constexpr int kKernelRuns = 10;
constexpr int kRounds = 3;

bool OnHost(CUdeviceptr p) {
  unsigned int type = 0;
  return cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_HOST;
}

// Allocates blocks of `bytes` until one is served from host memory (the device is full) and
// returns it (0 when an allocation fails first); the device blocks stay allocated and are added
// to `device_blocks` when given.
CUdeviceptr FillUntilSpilled(size_t bytes, std::vector<CUdeviceptr>* device_blocks = nullptr) {
  for (int i = 0; i < 4096; ++i) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS) return 0;
    if (OnHost(p)) return p;
    if (device_blocks) device_blocks->push_back(p);
  }
  return 0;
}

void BM_cuMemAlloc_cuMemFree(benchmark::State& state) {
  tessera::bench::AllocFreePairs(state);
}
BENCHMARK(BM_cuMemAlloc_cuMemFree);

// Every allocation spills: the device is filled first, and the first allocation after that is
// checked to be host memory.
void BM_cuMemAlloc_cuMemFree_Spilled(benchmark::State& state) {
  if (!OpenDevice()) return state.SkipWithError("no device");
  static CUdeviceptr first = FillUntilSpilled(kAllocBytes);
  if (first == 0) return state.SkipWithError("no allocation was served from host memory");
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, kAllocBytes) != CUDA_SUCCESS)
      return state.SkipWithError("cuMemAlloc failed");
    cuMemFree(p);
  }
}
BENCHMARK(BM_cuMemAlloc_cuMemFree_Spilled);

// Event and host-clock time (ns) of `runs` launches of `f` over `bytes` at `p`: the medians.
struct KernelTimes {
  double events_ns = 0, clock_ns = 0;
};
KernelTimes TimeKernel(CUfunction f, CUdeviceptr p, uint64_t bytes, int runs) {
  CUevent start, end;
  if (cuEventCreate(&start, 0) != CUDA_SUCCESS || cuEventCreate(&end, 0) != CUDA_SUCCESS) return {};
  void* params[] = {&p, &bytes};
  std::vector<double> events, clock;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (cuEventRecord(start, nullptr) != CUDA_SUCCESS ||
        cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr) != CUDA_SUCCESS ||
        cuEventRecord(end, nullptr) != CUDA_SUCCESS || cuEventSynchronize(end) != CUDA_SUCCESS) {
      return {};
    }
    auto t1 = std::chrono::steady_clock::now();
    float ms = 0;
    if (cuEventElapsedTime(&ms, start, end) != CUDA_SUCCESS) return {};
    events.push_back(ms * 1e6);
    clock.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  cuEventDestroy(start);
  cuEventDestroy(end);
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(events), median(clock)};
}

// The kernel child: one buffer on the device, one spilled; prints both buffers' kernel times.
int KernelChild() {
  if (!OpenDevice()) return 1;
  CUmodule module = nullptr;
  CUfunction f = nullptr;
  if (cuModuleLoadData(&module, "simgpu") != CUDA_SUCCESS ||
      cuModuleGetFunction(&f, module, kKernel) != CUDA_SUCCESS) {
    std::fprintf(stderr, "bench_spill: no %s kernel (simgpu only)\n", kKernel);
    return 1;
  }
  std::vector<CUdeviceptr> device_blocks;
  CUdeviceptr spilled = FillUntilSpilled(kBufferBytes, &device_blocks);
  if (spilled == 0 || device_blocks.empty()) {
    std::fprintf(stderr, "bench_spill: no 32 MiB buffer on the device and one spilled\n");
    return 1;
  }
  TimeKernel(f, device_blocks[0], kBufferBytes, 1);  // warm-up
  KernelTimes device = TimeKernel(f, device_blocks[0], kBufferBytes, kKernelRuns);
  KernelTimes host = TimeKernel(f, spilled, kBufferBytes, kKernelRuns);
  if (device.events_ns <= 0 || host.events_ns <= 0) return 1;
  std::printf("device_events_ns=%.0f device_clock_ns=%.0f host_events_ns=%.0f host_clock_ns=%.0f\n",
              device.events_ns, device.clock_ns, host.events_ns, host.clock_ns);
  return 0;
}

// `key`=<number> from the kernel child's line; 0 when absent.
double Figure(const std::string& text, const std::string& key) {
  size_t at = text.find(key + "=");
  return at == std::string::npos ? 0 : std::atof(text.c_str() + at + key.size() + 1);
}

// simgpu's `hostslow` of device 0, as `simgpu stat` reports it (0 when it cannot be read).
int HostSlowdown(const std::string& simgpu, const Setting& setting) {
  nlohmann::json stat = nlohmann::json::parse(Capture({simgpu, "stat"}, setting), nullptr, false);
  if (stat.is_discarded() || !stat.contains("devices") || stat["devices"].empty()) return 0;
  return stat["devices"][0].value("host_slowdown", 0);
}

// Writes a limits file (docs/in-container-library.md) for one device: `memory` bytes of limit,
// and `spill` bytes of it that may be served from host memory (no key when 0).
std::string WriteLimits(const std::string& path, uint64_t memory, uint64_t spill,
                        const std::string& region) {
  std::string body = "version=2\ndevices=1\nmemory.0=" + std::to_string(memory) + "\n";
  if (spill != 0) body += "spill.0=" + std::to_string(spill) + "\n";
  body += "cores.0=0\nregion=" + region + "\n";
  std::ofstream(path) << body << "end=" << body.size() << "\n";
  return path;
}

int Orchestrate(const std::vector<std::string>& extra) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::filesystem::path build = std::filesystem::path(self).parent_path().parent_path();
  std::string tmp =
      (std::filesystem::temp_directory_path() / "tessera-bench-spill-XXXXXX").string();
  if (mkdtemp(tmp.data()) == nullptr) return 1;
  std::vector<std::string> common = {"SIMGPU_STATE=" + tmp + "/state",
                                     std::string("SIMGPU_DEVICES=") + kDevice,
                                     "LD_LIBRARY_PATH=" + (build / "lib/simgpu").string()};
  const std::string library = "LD_PRELOAD=" + (build / "lib/libtessera-cuda.so").string();
  constexpr uint64_t kLimit = 4ull << 30;  // beyond the device, as under device-memory-scaling
  auto hooked = [&](const std::string& name, uint64_t spill) {
    Setting s{name, common};
    s.env.push_back(library);
    s.env.push_back("TESSERA_LIMITS_FILE=" +
                    WriteLimits(tmp + "/limits-" + name, kLimit, spill, tmp + "/region-" + name));
    return s;
  };
  Setting plain{"plain", common};
  Setting off = hooked("off", 0);
  Setting on = hooked("on", kLimit);

  const std::string alloc = "BM_cuMemAlloc_cuMemFree", spilled = alloc + "_Spilled";
  std::vector<std::string> only_alloc = extra, only_spilled = extra;
  only_alloc.push_back("--benchmark_filter=^" + alloc + "$");
  only_spilled.push_back("--benchmark_filter=^" + spilled + "$");
  std::map<std::string, double> plain_times, off_times, on_times, spilling_times;
  for (int round = 0; round < kRounds; ++round) {
    KeepMin(plain_times, BenchmarkTimes(self, plain, only_alloc));
    KeepMin(off_times, BenchmarkTimes(self, off, only_alloc));
    KeepMin(on_times, BenchmarkTimes(self, on, only_alloc));
    KeepMin(spilling_times, BenchmarkTimes(self, on, only_spilled));
  }
  std::string kernels = Capture({self, "--kernels"}, on);
  int hostslow = HostSlowdown((build / "bin/simgpu").string(), plain);
  std::filesystem::remove_all(tmp);

  int failed = 0;
  std::printf("\nA kernel over spilled memory (simgpu %s; %s over a 32 MiB buffer, median of %d)\n",
              kDevice, kKernel, kKernelRuns);
  std::printf("%-28s %14s %14s %10s\n", "timed by", "device (us)", "spilled (us)", "ratio");
  if (kernels.empty()) {
    std::printf("%-28s %14s\n", "-", "failed");
    ++failed;
  } else {
    for (const char* by : {"events", "clock"}) {
      double d = Figure(kernels, std::string("device_") + by + "_ns");
      double h = Figure(kernels, std::string("host_") + by + "_ns");
      std::printf("%-28s %14.1f %14.1f %9.1fx\n",
                  std::strcmp(by, "events") == 0 ? "events" : "host clock (+launch, sync)",
                  d / 1000, h / 1000, d > 0 ? h / d : 0.0);
    }
  }
  std::printf(
      "simgpu hostslow=%d%s: the ratio follows this setting of the simulated machine "
      "(docs/simgpu.md), it is not a measurement of a GPU\n",
      hostslow, hostslow == 75 ? " (its default)" : "");

  std::printf(
      "\ncuMemAlloc+cuMemFree of 2 MiB (ns per pair, real time, best of %d rounds; the "
      "issue's target: at most 300 ns added while nothing spills)\n",
      kRounds);
  std::printf("%-44s %12s %12s\n", "setting", "ns", "added");
  const double base = plain_times.count(alloc) ? plain_times[alloc] : 0;
  struct Row {
    const char* name;
    std::map<std::string, double>* times;
    const std::string* benchmark;
  } rows[] = {{"without the library", &plain_times, &alloc},
              {"library, spilling off (no spill.0)", &off_times, &alloc},
              {"library, spilling on, the device has room", &on_times, &alloc},
              {"library, every allocation spills (pinned)", &spilling_times, &spilled}};
  for (const Row& row : rows) {
    if (!row.times->count(*row.benchmark)) {
      std::printf("%-44s %12s\n", row.name, "failed");
      ++failed;
      continue;
    }
    double ns = (*row.times)[*row.benchmark];
    if (row.times == &plain_times || base <= 0) {
      std::printf("%-44s %12.1f %12s\n", row.name, ns, "-");
    } else {
      std::printf("%-44s %12.1f %12.1f\n", row.name, ns, ns - base);
    }
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--kernels") == 0) return KernelChild();
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
