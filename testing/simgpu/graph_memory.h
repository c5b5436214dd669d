// Graph memory nodes, as the real driver keeps them: an allocation node gets its address when it
// is made (fixed for the graph's life); each launch backs the graph's allocations with device
// memory the device keeps for graphs (growing it, charged, when what it keeps unused is short;
// CUDA_ERROR_OUT_OF_MEMORY when the device lacks it) and runs its free nodes. A graph allocation
// that no free node of its graph frees stays live after the launch until cuMemFree(Async); the
// memory then stays kept for the next launch until cuDeviceGraphMemTrim. All functions need
// Driver::mu.
#pragma once

#include <cstdint>

#include "driver_state.h"

namespace simgpu {

// Adds an allocation node of `bytes` on device `ordinal` to `g`; its address goes to *address.
CUresult AddMemAllocNode(Driver& d, Graph* g, int ordinal, size_t bytes, KernelNode** node,
                         CUdeviceptr* address);

// Adds a free node of `address` (an allocation node's) to `g`.
CUresult AddMemFreeNode(Driver& d, Graph* g, CUdeviceptr address, KernelNode** node);

// A launch of `exec` by `ctx`: backs its allocations and runs its frees. CUDA_ERROR_INVALID_VALUE
// when one of its allocations is still live from an earlier launch.
CUresult LaunchGraphMemory(Driver& d, const GraphExec& exec, Context* ctx);

// Frees a live graph allocation (cuMemFree, cuMemFreeAsync); erases it from d.allocations.
void GraphMemoryFree(Driver& d, std::map<uint64_t, Allocation>::iterator it);

}  // namespace simgpu
