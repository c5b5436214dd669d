// Device memory bookkeeping shared by the allocation, copy and VMM entry points. Needs Driver::mu.
#pragma once

#include <cstddef>
#include <cstdint>

#include "driver_state.h"

namespace simgpu {

// Charges `bytes` rounded up to the 2 MiB granule on the context's device and gives the
// allocation a fresh device address (or, for managed memory, a host mapping of that size).
// CUDA_ERROR_INVALID_VALUE for 0 bytes, CUDA_ERROR_OUT_OF_MEMORY when the device lacks them.
CUresult Allocate(Driver& d, Context* ctx, size_t bytes, bool managed, CUdeviceptr* out);

// Whether [ptr, ptr + bytes) lies in live allocations or mapped VMM ranges of this process.
bool ValidDeviceRange(const Driver& d, uint64_t ptr, size_t bytes);

// Whether `ptr` is in the simulated device address range (so it must be a device pointer).
bool InDeviceAddressRange(uint64_t ptr);

}  // namespace simgpu
