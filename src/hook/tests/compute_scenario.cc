// compute_scenario: CUDA programs for the compute limiter's behaviour tests
// (compute_scenario_test.cc), run with libtessera-cuda.so preloaded over simgpu.
//
//   compute_scenario contexts   kernels in a context, which is destroyed, then in a new one (which
//                               may get the first one's handle); the same with the primary context
//                               and cuDevicePrimaryCtxReset. Says "next context" on stderr before
//                               each new context's kernels.
//   compute_scenario waiting    from one thread, as NCCL launches its kernels: a kernel that waits
//                               for a signal on device 0, then the kernel that signals it on device
//                               1 (on device 0 with one device), then the same on two streams of
//                               device 0; then waits for all of it.
//   compute_scenario capture_to_graph [runtime]
//                               a graph captured in global mode with cuStreamBeginCaptureToGraph
//                               (with `runtime`, its _ptsz variant from cuGetProcAddress_v2 with
//                               the per-thread-stream flag, as the CUDA runtime asks) while
//                               another thread launches kernels, then launched.
//
// Exits 0 when every call succeeded, 1 otherwise. Thread-safety: single-threaded, but for
// capture_to_graph's launching thread.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "abi/cuda_driver.h"
#include "check_cuda.h"

namespace {

// Launches 20 `busy_100us` kernels of a module of the current context, 2 ms apart, and waits.
void Kernels() {
  static const char kImage[] = "compute_scenario module";
  CUmodule module;
  CUfunction f;
  CUstream stream;
  CHECK(cuModuleLoadData(&module, kImage));
  CHECK(cuModuleGetFunction(&f, module, "busy_100us"));
  CHECK(cuStreamCreate(&stream, 0));
  for (int i = 0; i < 20; ++i) {
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr));
    CHECK(cuStreamSynchronize(stream));
    timespec pause = {0, 2000000};
    nanosleep(&pause, nullptr);
  }
  CHECK(cuStreamDestroy(stream));
}

int Contexts() {
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, 0, dev));
  Kernels();
  CHECK(cuCtxDestroy(ctx));
  std::fprintf(stderr, "next context\n");
  CHECK(cuCtxCreate(&ctx, 0, dev));
  Kernels();
  CHECK(cuCtxDestroy(ctx));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  Kernels();
  CHECK(cuDevicePrimaryCtxReset(dev));
  std::fprintf(stderr, "next context\n");
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  Kernels();
  return 0;
}

// Launches `wait_<k>` on `waiting` and then `signal_<k>` on `signalling`, each in its context.
void WaitThenSignal(int k, CUcontext wait_ctx, CUstream waiting, CUcontext signal_ctx,
                    CUstream signalling) {
  static const char kImage[] = "compute_scenario module";
  CUmodule module;
  CUfunction wait, signal;
  CHECK(cuCtxSetCurrent(wait_ctx));
  CHECK(cuModuleLoadData(&module, kImage));
  CHECK(cuModuleGetFunction(&wait, module, ("wait_" + std::to_string(k)).c_str()));
  CHECK(cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, waiting, nullptr, nullptr));
  CHECK(cuCtxSetCurrent(signal_ctx));
  CHECK(cuModuleLoadData(&module, kImage));
  CHECK(cuModuleGetFunction(&signal, module, ("signal_" + std::to_string(k)).c_str()));
  CHECK(cuLaunchKernel(signal, 1, 1, 1, 1, 1, 1, 0, signalling, nullptr, nullptr));
}

int Waiting() {
  int count = 0;
  CHECK(cuDeviceGetCount(&count));
  CUcontext ctx[2];
  CUstream stream[2], other;
  for (int i = 0; i < 2; ++i) {
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, i < count ? i : 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx[i], dev));
    CHECK(cuCtxSetCurrent(ctx[i]));
    CHECK(cuStreamCreate(&stream[i], CU_STREAM_NON_BLOCKING));
  }
  CHECK(cuCtxSetCurrent(ctx[0]));
  CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  WaitThenSignal(1, ctx[0], stream[0], ctx[1], stream[1]);
  WaitThenSignal(2, ctx[0], stream[0], ctx[0], other);
  for (int i = 0; i < 2; ++i) CHECK(cuStreamSynchronize(stream[i]));
  CHECK(cuStreamSynchronize(other));
  return 0;
}

// While a stream of the primary context captures into an existing graph in global mode, another
// thread launches `busy_100us` kernels of its own (the limiter times the first ones); the capture
// must complete. `runtime`: the capture begins through cuGetProcAddress_v2's answer.
int CaptureToGraph(bool runtime) {
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  static const char kImage[] = "compute_scenario module";
  CUmodule module;
  CUfunction f;
  CHECK(cuModuleLoadData(&module, kImage));
  CHECK(cuModuleGetFunction(&f, module, "busy_100us"));
  CUstream capturing, other;
  CHECK(cuStreamCreate(&capturing, 0));
  CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  auto begin = &cuStreamBeginCaptureToGraph;
  if (runtime) {
    void* fn = nullptr;
    CHECK(cuGetProcAddress_v2("cuStreamBeginCaptureToGraph", &fn, 12030,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr));
    begin = reinterpret_cast<decltype(begin)>(fn);
  }
  CUgraph graph, captured = nullptr;
  CHECK(cuGraphCreate(&graph, 0));
  CHECK(begin(capturing, graph, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  std::thread launcher([&] {
    CHECK(cuCtxSetCurrent(ctx));
    for (int i = 0; i < 20; ++i) {
      CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, other, nullptr, nullptr));
      timespec pause = {0, 1000000};
      nanosleep(&pause, nullptr);
    }
  });
  for (int i = 0; i < 5; ++i) {
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, capturing, nullptr, nullptr));
  }
  launcher.join();
  CHECK(cuStreamEndCapture(capturing, &captured));
  CHECK(cuStreamSynchronize(other));
  CUgraphExec exec;
  CHECK(cuGraphInstantiate(&exec, captured, 0));
  CHECK(cuGraphLaunch(exec, capturing));
  CHECK(cuStreamSynchronize(capturing));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CHECK(cuInit(0));
  if (argc == 2 && std::strcmp(argv[1], "contexts") == 0) return Contexts();
  if (argc == 2 && std::strcmp(argv[1], "waiting") == 0) return Waiting();
  if (argc >= 2 && std::strcmp(argv[1], "capture_to_graph") == 0) {
    return CaptureToGraph(argc == 3 && std::strcmp(argv[2], "runtime") == 0);
  }
  std::fprintf(stderr, "usage: compute_scenario contexts|waiting|capture_to_graph [runtime]\n");
  return 2;
}
