// tessera-demo-workload: the GPU program the demo runs inside its containers (under
// libtessera-cuda.so, over simgpu or a real driver). It looks at GPU 0 the way a user would and
// prints what it saw, one `key=value` line per finding (the demo checks them) after a line for
// people:
//
//   1. NVML, as nvidia-smi does: name and memory total  -> nvml.name, nvml.total_mib
//   2. allocates in 64 MiB steps until the driver says out of memory -> oom.allocated_mib,
//   oom.error
//   3. keeps the GPU busy with 2 ms kernels for 1.5 s and measures its share of the device time
//      -> compute.percent
//
// With `--nvml-only`, step 1 alone (tests that start many containers at once). With `--hold MIB`,
// step 1, then MIB MiB allocated in 64 MiB steps (as far as the driver allows) and held until the
// process is killed -> hold.allocated_mib (tests of a limit that containers share). Exits 0 when
// every call it needed worked (an out-of-memory answer is the expected end of step 2), 1 otherwise.
// Single-threaded.
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kStep = 64 * kMiB;
constexpr int kKernelUs = 2000;
constexpr double kComputeSeconds = 1.5;

double NowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool Ok(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "workload: %s failed: CUresult %d\n", what, static_cast<int>(rc));
  return false;
}

bool ShowNvml() {
  nvmlDevice_t device;
  char name[96] = {0};
  nvmlMemory_t memory;
  if (nvmlInit() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex(0, &device) != NVML_SUCCESS ||
      nvmlDeviceGetName(device, name, sizeof(name)) != NVML_SUCCESS ||
      nvmlDeviceGetMemoryInfo(device, &memory) != NVML_SUCCESS) {
    std::fprintf(stderr, "workload: NVML could not describe GPU 0\n");
    return false;
  }
  std::printf("nvidia-smi view: GPU 0  %s  %lluMiB / %lluMiB\n", name,
              static_cast<unsigned long long>(memory.used / kMiB),
              static_cast<unsigned long long>(memory.total / kMiB));
  std::printf("nvml.name=%s\nnvml.total_mib=%llu\n", name,
              static_cast<unsigned long long>(memory.total / kMiB));
  nvmlShutdown();
  return true;
}

bool FillMemory() {
  std::vector<CUdeviceptr> blocks;
  CUresult rc = CUDA_SUCCESS;
  while (blocks.size() < 1024 * 1024) {  // bounded: 64 TiB
    CUdeviceptr p = 0;
    rc = cuMemAlloc(&p, kStep);
    if (rc != CUDA_SUCCESS) break;
    blocks.push_back(p);
  }
  uint64_t allocated = blocks.size() * kStep / kMiB;
  std::printf("allocated %llu MiB in 64 MiB steps; the next step got %s\n",
              static_cast<unsigned long long>(allocated),
              rc == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "another error");
  std::printf("oom.allocated_mib=%llu\noom.error=%d\n", static_cast<unsigned long long>(allocated),
              static_cast<int>(rc));
  for (CUdeviceptr p : blocks) {
    if (!Ok(cuMemFree(p), "cuMemFree")) return false;
  }
  return rc == CUDA_ERROR_OUT_OF_MEMORY;
}

// Allocates up to `mib` MiB in 64 MiB steps, says how much it got and holds it: never returns.
[[noreturn]] void HoldMemory(uint64_t mib) {
  uint64_t allocated = 0;
  while (allocated + kStep / kMiB <= mib) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, kStep) != CUDA_SUCCESS) break;
    allocated += kStep / kMiB;
  }
  std::printf("hold.allocated_mib=%llu\n", static_cast<unsigned long long>(allocated));
  std::fflush(stdout);
  for (;;) pause();
}

bool MeasureCompute() {
  static const char kImage[] = "tessera demo workload";
  CUmodule module;
  CUfunction kernel;
  CUstream stream;
  if (!Ok(cuModuleLoadData(&module, kImage), "cuModuleLoadData") ||
      !Ok(cuModuleGetFunction(&kernel, module, "busy_2000us"), "cuModuleGetFunction") ||
      !Ok(cuStreamCreate(&stream, 0), "cuStreamCreate")) {
    return false;
  }
  void* no_params[] = {nullptr};
  int launches = 0;
  double start = NowSeconds();
  while (NowSeconds() - start < kComputeSeconds) {
    for (int i = 0; i < 5; ++i, ++launches) {
      if (!Ok(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, stream, no_params, nullptr),
              "cuLaunchKernel")) {
        return false;
      }
    }
    if (!Ok(cuStreamSynchronize(stream), "cuStreamSynchronize")) return false;
  }
  double elapsed = NowSeconds() - start;
  double percent = 100.0 * launches * kKernelUs * 1e-6 / elapsed;
  std::printf("ran %d kernels of 2 ms in %.2f s: %.1f%% of the GPU's time\n", launches, elapsed,
              percent);
  std::printf("compute.percent=%.1f\n", percent);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!ShowNvml()) return 1;
  if (argc > 1 && std::strcmp(argv[1], "--nvml-only") == 0) return 0;
  CUdevice device;
  CUcontext context;
  if (!Ok(cuInit(0), "cuInit") || !Ok(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !Ok(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !Ok(cuCtxSetCurrent(context), "cuCtxSetCurrent")) {
    return 1;
  }
  if (argc > 2 && std::strcmp(argv[1], "--hold") == 0)
    HoldMemory(std::strtoull(argv[2], nullptr, 10));
  bool ok = FillMemory() && MeasureCompute();
  std::fflush(stdout);
  return ok ? 0 : 1;
}
