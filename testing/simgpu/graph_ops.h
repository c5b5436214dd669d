// Graph building shared by the current and the first-ABI cuGraphAddKernelNode. Thread-safe: takes
// Driver::mu itself.
#pragma once

#include <cstddef>

#include "abi/cuda_driver.h"
#include "driver_state.h"

namespace simgpu {

// Adds a kernel node running `func` at `shape` to `hGraph` after `deps` (which must be nodes of
// this process).
CUresult AddKernelNode(CUgraphNode* phNode, CUgraph hGraph, const CUgraphNode* deps, size_t numDeps,
                       CUfunction func, const LaunchShape& shape);

// The shape of a kernel node's parameters (both ABIs start with the same fields).
template <typename Params>
LaunchShape ShapeOf(const Params& p) {
  return LaunchShape{{p.gridDimX, p.gridDimY, p.gridDimZ}, {p.blockDimX, p.blockDimY, p.blockDimZ}};
}

}  // namespace simgpu
