// compute_load: the compute limiter's test program. It keeps one device busy with kernels
// launched back to back through one launch path, synchronising every few launches as training
// loops do (the host runs one batch ahead: after launching a batch it waits for the one before),
// from a common start time for a fixed number of seconds.
//
//   compute_load <path> <kernel> <sync_every> <start_monotonic_ms> <seconds>
//   compute_load startup
//
// Kernels, each of N us on average (simgpu's default 108 SMs):
//   N        `busy_<N>us`, one block;
//   gridN    `grid_1000ns` launched at 1 and at 2N - 1 waves of blocks in turn (its time follows
//            the launch's size: 1 us and 2N - 1 us);
//   mixedN   `busy_<N>us` and gridN's launches in turn;
//   manyN    2,000 distinct functions `grid_<k>ns` of one block, k from N/2 to 3N/2 us, in turn.
//   workN    `work_1000ns` launched at one block per SM (a persistent kernel) with N/2, 3N/4, N,
//            5N/4 and 3N/2 units of work in turn: its time follows its argument, not its shape.
// Paths other than `kernel` and `kernel2s` launch the first of these alone.
//
// Paths: kernel, kernel2s (the kernel path's launches on two streams in turn, which run together),
// kernel_ptsz, ex, ex_ptsz, coop, coop_ptsz, multi, launch, grid, grid_async,
// graph, graph_ptsz, graph_busy (graph's graph, captured in global mode while another thread
// launches kernels, as PyTorch captures beside its NCCL watchdog), runtime (cuGetProcAddress_v2
// with the per-thread-stream flag, as the CUDA runtime asks). Prints "ready" once set up and
// "launches <n>" at the end. `startup` prints "startup_us <n>": from main() to the end of the first
// synchronised launch. Thread-safety: single-threaded.
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "abi/cuda_driver.h"
#include "check_cuda.h"

namespace {

int64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Setup {
  CUcontext ctx = nullptr;
  CUfunction f = nullptr;
  CUstream stream = nullptr;
  CUstream stream2 = nullptr;    // kernel2s's second stream
  std::vector<CUfunction> plan;  // the `kernel` path's launches, in turn, with their blocks
  std::vector<unsigned> blocks;
  std::vector<uint64_t> units;  // and their first argument (a work_ kernel's units; 0: none)
  size_t next = 0;
};

constexpr unsigned kSms = 108;

// Fills the launch plan of `kernel` (see the top of the file).
void Plan(Setup& s, CUmodule module, const std::string& kernel) {
  auto function = [&](const std::string& name) {
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, module, name.c_str()));
    return f;
  };
  auto add = [&](CUfunction f, unsigned blocks, uint64_t units = 0) {
    s.plan.push_back(f);
    s.blocks.push_back(blocks);
    s.units.push_back(units);
  };
  auto starts = [&](const char* prefix) { return kernel.rfind(prefix, 0) == 0; };
  if (starts("grid") || starts("mixed")) {
    int us = std::atoi(kernel.c_str() + (starts("grid") ? 4 : 5));
    CUfunction grid = function("grid_1000ns");
    if (starts("mixed")) add(function("busy_" + std::to_string(us) + "us"), 1);
    add(grid, kSms);
    if (starts("mixed")) add(function("busy_" + std::to_string(us) + "us"), 1);
    add(grid, (2 * us - 1) * kSms);
  } else if (starts("work")) {
    int us = std::atoi(kernel.c_str() + 4);
    CUfunction work = function("work_1000ns");
    for (int quarters : {2, 3, 4, 5, 6}) add(work, kSms, static_cast<uint64_t>(us * quarters / 4));
  } else if (starts("many")) {
    int us = std::atoi(kernel.c_str() + 4);
    for (int i = 0; i < 2000; ++i) {
      add(function("grid_" + std::to_string(us * 500 + i * us / 2) + "ns"), 1);
    }
  } else {
    add(function("busy_" + kernel + "us"), 1);
  }
  s.f = s.plan[0];
}

Setup Prepare(const std::string& kernel) {
  Setup s;
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&s.ctx, dev));
  CHECK(cuCtxSetCurrent(s.ctx));
  static const char kImage[] = "compute_load module";
  CUmodule module;
  CHECK(cuModuleLoadData(&module, kImage));
  Plan(s, module, kernel);
  CHECK(cuStreamCreate(&s.stream, 0));
  CHECK(cuStreamCreate(&s.stream2, 0));
  return s;
}

using LaunchKernelFn = decltype(&cuLaunchKernel);

// The stream a path's launches go to, as an explicit handle.
CUstream StreamOf(const std::string& path, const Setup& s) {
  if (path == "launch" || path == "grid") return nullptr;  // the legacy default stream
  if (path.find("ptsz") != std::string::npos || path == "runtime") return CU_STREAM_PER_THREAD;
  return s.stream;
}

// Launches `count` kernels through `path` (a graph path launches its graph once).
void Batch(const std::string& path, Setup& s, int count, CUgraphExec graph,
           LaunchKernelFn runtime_launch) {
  void* no_params[] = {nullptr};
  CUlaunchConfig config = {};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  config.hStream = path == "ex_ptsz" ? nullptr : s.stream;
  CUDA_LAUNCH_PARAMS multi = {s.f, 1, 1, 1, 1, 1, 1, 0, s.stream, no_params};
  if (path == "graph") {
    CHECK(cuGraphLaunch(graph, s.stream));
    return;
  }
  if (path == "graph_ptsz") {
    CHECK(cuGraphLaunch_ptsz(graph, nullptr));
    return;
  }
  for (int i = 0; i < count; ++i) {
    if (path == "kernel" || path == "kernel2s") {
      size_t k = s.next++ % s.plan.size();
      uint64_t units = s.units[k];
      void* params[] = {&units};
      CUstream stream = path == "kernel2s" && i % 2 == 1 ? s.stream2 : s.stream;
      CHECK(cuLaunchKernel(s.plan[k], s.blocks[k], 1, 1, 1, 1, 1, 0, stream,
                           units != 0 ? params : no_params, nullptr));
    } else if (path == "kernel_ptsz") {
      CHECK(cuLaunchKernel_ptsz(s.f, 1, 1, 1, 1, 1, 1, 0, nullptr, no_params, nullptr));
    } else if (path == "ex") {
      CHECK(cuLaunchKernelEx(&config, s.f, no_params, nullptr));
    } else if (path == "ex_ptsz") {
      CHECK(cuLaunchKernelEx_ptsz(&config, s.f, no_params, nullptr));
    } else if (path == "coop") {
      CHECK(cuLaunchCooperativeKernel(s.f, 1, 1, 1, 1, 1, 1, 0, s.stream, no_params));
    } else if (path == "coop_ptsz") {
      CHECK(cuLaunchCooperativeKernel_ptsz(s.f, 1, 1, 1, 1, 1, 1, 0, nullptr, no_params));
    } else if (path == "multi") {
      CHECK(cuLaunchCooperativeKernelMultiDevice(&multi, 1, 0));
    } else if (path == "launch") {
      CHECK(cuLaunch(s.f));
    } else if (path == "grid") {
      CHECK(cuLaunchGrid(s.f, 1, 1));
    } else if (path == "grid_async") {
      CHECK(cuLaunchGridAsync(s.f, 1, 1, s.stream));
    } else if (path == "runtime") {
      CHECK(runtime_launch(s.f, 1, 1, 1, 1, 1, 1, 0, nullptr, no_params, nullptr));
    } else {
      std::fprintf(stderr, "unknown path %s\n", path.c_str());
      std::exit(2);
    }
  }
}

// Launches `busy_1us` kernels on a stream of its own every 200 us until `stop`.
void LaunchUntil(const Setup& s, const std::atomic<bool>& stop) {
  CHECK(cuCtxSetCurrent(s.ctx));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUmodule module;
  CUfunction f;
  CHECK(cuModuleLoadData(&module, "compute_load side module"));
  CHECK(cuModuleGetFunction(&f, module, "busy_1us"));
  while (!stop) {
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr));
    timespec pause = {0, 200000};
    nanosleep(&pause, nullptr);
  }
  CHECK(cuStreamSynchronize(stream));
}

// The whole loop body as one graph of `count` kernels captured in global mode (with `busy`,
// while another thread launches, the capture taking a few milliseconds).
CUgraphExec Capture(const Setup& s, int count, bool busy) {
  std::atomic<bool> stop{false};
  std::thread other;
  if (busy) other = std::thread(LaunchUntil, std::cref(s), std::cref(stop));
  CUgraph g;
  CHECK(cuStreamBeginCapture(s.stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < count; ++i) {
    CHECK(cuLaunchKernel(s.f, 1, 1, 1, 1, 1, 1, 0, s.stream, nullptr, nullptr));
    if (busy) {
      timespec pause = {0, 500000};
      nanosleep(&pause, nullptr);
    }
  }
  CHECK(cuStreamEndCapture(s.stream, &g));
  stop = true;
  if (busy) other.join();
  CUgraphExec graph;
  CHECK(cuGraphInstantiate(&graph, g, 0));
  return graph;
}

int Startup() {
  int64_t begin = NowNs(CLOCK_MONOTONIC);
  Setup s = Prepare("20");
  Batch("kernel", s, 1, nullptr, nullptr);
  CHECK(cuStreamSynchronize(s.stream));
  std::printf("startup_us %lld\n", static_cast<long long>((NowNs(CLOCK_MONOTONIC) - begin) / 1000));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "startup") == 0) return Startup();
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: compute_load <path> <kernel> <sync_every> <start_monotonic_ms> <seconds>\n"
                 "       compute_load startup\n");
    return 2;
  }
  std::string path = argv[1];
  std::string kernel = argv[2];
  int sync_every = std::atoi(argv[3]);
  int64_t start_ns = std::atoll(argv[4]) * 1000000;
  int64_t end_ns = start_ns + static_cast<int64_t>(std::atof(argv[5]) * 1e9);
  Setup s = Prepare(kernel);

  CUgraphExec graph = nullptr;
  if (path == "graph" || path == "graph_ptsz" || path == "graph_busy") {
    graph = Capture(s, sync_every, path == "graph_busy");
    if (path == "graph_busy") path = "graph";
  }
  LaunchKernelFn runtime_launch = nullptr;
  if (path == "runtime") {
    void* fn = nullptr;
    CHECK(cuGetProcAddress_v2("cuLaunchKernel", &fn, 13000,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr));
    runtime_launch = reinterpret_cast<LaunchKernelFn>(fn);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  int64_t wait = start_ns - NowNs(CLOCK_MONOTONIC);
  if (wait > 0) {
    timespec ts = {static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
    nanosleep(&ts, nullptr);
  }
  CUevent done[2], done2[2];
  for (CUevent* e : {&done[0], &done[1], &done2[0], &done2[1]}) {
    CHECK(cuEventCreate(e, CU_EVENT_DISABLE_TIMING));
  }
  CUstream stream = StreamOf(path, s);
  const bool two = path == "kernel2s";
  long long launches = 0;
  for (int batch = 0; NowNs(CLOCK_MONOTONIC) < end_ns; ++batch) {
    Batch(path, s, sync_every, graph, runtime_launch);
    CHECK(cuEventRecord(done[batch % 2], stream));
    if (two) CHECK(cuEventRecord(done2[batch % 2], s.stream2));
    if (batch > 0) {  // the batch before
      CHECK(cuEventSynchronize(done[(batch + 1) % 2]));
      if (two) CHECK(cuEventSynchronize(done2[(batch + 1) % 2]));
    }
    launches += sync_every;
  }
  CHECK(cuCtxSynchronize());
  std::printf("launches %lld\n", launches);
  return 0;
}
