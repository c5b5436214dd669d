// Graph building shared by the current and the first-ABI cuGraphAddKernelNode. Thread-safe: takes
// Driver::mu itself.
#pragma once

#include <cstddef>

#include "abi/cuda_driver.h"

namespace simgpu {

// Adds a kernel node running `func` to `hGraph` after `deps` (which must be nodes of this process).
CUresult AddKernelNode(CUgraphNode* phNode, CUgraph hGraph, const CUgraphNode* deps, size_t numDeps,
                       CUfunction func);

}  // namespace simgpu
