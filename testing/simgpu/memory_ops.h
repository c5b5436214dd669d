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

// Where the bytes of a range a kernel reads lie.
struct TouchedBytes {
  uint64_t device = 0;  // in device memory
  uint64_t host = 0;    // in host memory the device maps
};

// Whether a kernel of `ctx` may read [ptr, ptr + bytes): every byte lies in memory its device
// addresses, which is its device's allocations (and IPC-opened ranges) or those of a device its
// context has peer access to, managed memory, VMM mappings whose access cuMemSetAccess granted
// the device (device- or host-located), pinned (or registered) host memory and host pools'
// allocations (mapped for every device). Fills `out` with how many lie in host memory and how many
// in device memory.
bool AddressableByKernel(const Driver& d, const Context& ctx, uint64_t ptr, uint64_t bytes,
                         TouchedBytes* out);

// Frees a pinned host allocation found in d.host_allocations (unmaps its pages), or unregisters a
// registered range (its pages stay the program's), and stops counting it.
void FreeHostAllocation(Driver& d, std::map<uint64_t, HostAllocation>::iterator it);

}  // namespace simgpu
