// What bench_hook and bench_spill measure in their children alike: device 0's primary context and
// a cuMemAlloc+cuMemFree pair of 2 MiB, the path whose added cost has the 300 ns target. Each
// program registers the pair as BM_cuMemAlloc_cuMemFree (the name its parent runs by filter).
// Header-only; OpenDevice is safe from several threads (a function-local static).
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>

#include "abi/cuda_driver.h"

namespace tessera::bench {

inline constexpr size_t kAllocBytes = 2 << 20;

// Opens device 0's primary context once per process; false when the driver cannot.
inline bool OpenDevice() {
  static bool ok = [] {
    CUdevice dev;
    CUcontext ctx;
    return cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
           cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS &&
           cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
  }();
  return ok;
}

// The body of BM_cuMemAlloc_cuMemFree: one pair of kAllocBytes per iteration.
inline void AllocFreePairs(benchmark::State& state) {
  if (!OpenDevice()) return state.SkipWithError("no device");
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, kAllocBytes) != CUDA_SUCCESS) {
      return state.SkipWithError("cuMemAlloc failed");
    }
    cuMemFree(p);
  }
}

}  // namespace tessera::bench
