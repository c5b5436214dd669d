// Graph building shared by the current and the first-ABI cuGraphAddKernelNode. Thread-safe: takes
// Driver::mu itself.
#pragma once

#include <cstddef>

#include "abi/cuda_driver.h"
#include "driver_state.h"
#include "launch.h"

namespace simgpu {

// Adds a kernel node running `func` at `shape` to `hGraph` after `deps` (which must be nodes of
// this process). A `work_<N>ns` kernel's unit count is read from `args` now, as a real graph copies
// its nodes' arguments: CUDA_ERROR_INVALID_VALUE when it has none.
CUresult AddKernelNode(CUgraphNode* phNode, CUgraph hGraph, const CUgraphNode* deps, size_t numDeps,
                       CUfunction func, const LaunchShape& shape, const KernelArgs& args);

// The shape of a kernel node's parameters (both ABIs start with the same fields).
template <typename Params>
LaunchShape ShapeOf(const Params& p) {
  return LaunchShape{{p.gridDimX, p.gridDimY, p.gridDimZ}, {p.blockDimX, p.blockDimY, p.blockDimZ}};
}

// The arguments of a kernel node's parameters (both ABIs).
template <typename Params>
KernelArgs ArgsOf(const Params& p) {
  return KernelArgs{p.kernelParams, p.extra};
}

}  // namespace simgpu
