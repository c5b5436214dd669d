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
//   compute_scenario capture_ends_refused
//                               a graph captured in global mode that another thread tries to end
//                               (refused: not the thread that began it), and its own thread ends
//                               the legacy stream's capture (refused: there is none), before a
//                               third thread launches kernels; then ended and launched.
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

// The capture scenarios: a blocking stream that captures, and a non-blocking one another thread
// launches `busy_100us` kernels on, in the primary context.
struct CaptureSetup {
  CUcontext ctx = nullptr;
  CUfunction f = nullptr;
  CUstream capturing = nullptr, other = nullptr;
};

CaptureSetup PrepareCapture() {
  CaptureSetup s;
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&s.ctx, dev));
  CHECK(cuCtxSetCurrent(s.ctx));
  static const char kImage[] = "compute_scenario module";
  CUmodule module;
  CHECK(cuModuleLoadData(&module, kImage));
  CHECK(cuModuleGetFunction(&s.f, module, "busy_100us"));
  CHECK(cuStreamCreate(&s.capturing, 0));
  CHECK(cuStreamCreate(&s.other, CU_STREAM_NON_BLOCKING));
  return s;
}

// Another thread launches 20 kernels on `other`, 1 ms apart (the limiter times the first ones
// unless a capture is active), and is joined.
void LaunchElsewhere(const CaptureSetup& s) {
  std::thread launcher([&] {
    CHECK(cuCtxSetCurrent(s.ctx));
    for (int i = 0; i < 20; ++i) {
      CHECK(cuLaunchKernel(s.f, 1, 1, 1, 1, 1, 1, 0, s.other, nullptr, nullptr));
      timespec pause = {0, 1000000};
      nanosleep(&pause, nullptr);
    }
  });
  launcher.join();
}

// Ends the capture of `capturing` (which must succeed), waits for `other`, and launches the graph.
void EndAndLaunch(const CaptureSetup& s) {
  CUgraph captured = nullptr;
  CHECK(cuStreamEndCapture(s.capturing, &captured));
  CHECK(cuStreamSynchronize(s.other));
  CUgraphExec exec;
  CHECK(cuGraphInstantiate(&exec, captured, 0));
  CHECK(cuGraphLaunch(exec, s.capturing));
  CHECK(cuStreamSynchronize(s.capturing));
}

// A capture into an existing graph in global mode while another thread launches. `runtime`: the
// capture begins through cuGetProcAddress_v2's answer.
int CaptureToGraph(bool runtime) {
  CaptureSetup s = PrepareCapture();
  auto begin = &cuStreamBeginCaptureToGraph;
  if (runtime) {
    void* fn = nullptr;
    CHECK(cuGetProcAddress_v2("cuStreamBeginCaptureToGraph", &fn, 12030,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr));
    begin = reinterpret_cast<decltype(begin)>(fn);
  }
  CUgraph graph;
  CHECK(cuGraphCreate(&graph, 0));
  CHECK(begin(s.capturing, graph, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < 5; ++i) {
    CHECK(cuLaunchKernel(s.f, 1, 1, 1, 1, 1, 1, 0, s.capturing, nullptr, nullptr));
  }
  LaunchElsewhere(s);
  EndAndLaunch(s);
  return 0;
}

// A global capture that another thread tries to end first (the driver refuses:
// CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, and the capture goes on), and whose thread ends the
// legacy stream's capture (there is none: refused too), then another thread launches.
int CaptureEndsRefused() {
  CaptureSetup s = PrepareCapture();
  CHECK(cuStreamBeginCapture(s.capturing, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuLaunchKernel(s.f, 1, 1, 1, 1, 1, 1, 0, s.capturing, nullptr, nullptr));
  std::thread([&] {
    CHECK(cuCtxSetCurrent(s.ctx));
    CUgraph graph = nullptr;
    CUresult rc = cuStreamEndCapture(s.capturing, &graph);
    if (rc != CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) {
      std::fprintf(stderr, "cuStreamEndCapture from another thread returned %d\n", rc);
      std::exit(1);
    }
  }).join();
  CUgraph none = nullptr;
  if (cuStreamEndCapture(nullptr, &none) == CUDA_SUCCESS) {
    std::fprintf(stderr, "cuStreamEndCapture of the legacy stream succeeded\n");
    return 1;
  }
  LaunchElsewhere(s);
  EndAndLaunch(s);
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
  if (argc == 2 && std::strcmp(argv[1], "capture_ends_refused") == 0) return CaptureEndsRefused();
  std::fprintf(stderr,
               "usage: compute_scenario contexts|waiting|capture_to_graph [runtime]|"
               "capture_ends_refused\n");
  return 2;
}
