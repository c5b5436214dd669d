// The host memory behind a host-located cuMemCreate handle (CU_MEM_LOCATION_TYPE_HOST, HOST_NUMA,
// HOST_NUMA_CURRENT): a memfd whose first page is the header an exported descriptor carries
// (cuda_vmm_share.cc) and whose bytes follow. Each mapping (cuMemMap) maps those bytes at its
// virtual address, so the CPU reaches the memory through the address the driver gave, as on a
// real system with unified addressing (NCCL's proxy and shared-memory transport dereference
// it). The CPU may touch a mapping only once cuMemSetAccess has granted a host location access:
// until then its pages are PROT_NONE and a touch faults, as with the real driver. Processes that
// import the handle map the same memfd and see the same bytes.
#pragma once

#include <cstdint>

namespace simgpu {

// Offset of the memory's first byte in its memfd: one page for the export header.
inline constexpr uint64_t kHostBackingHeader = 4096;

// A new memfd for `size` bytes (and the header), or -1 with errno set.
int NewHostBacking(uint64_t size);

// Maps bytes [offset, offset + size) of the memory in `fd` at `va`, inaccessible until
// AllowHostAccess. False when that address range is taken in this process.
bool MapHostBacking(int fd, uint64_t va, uint64_t size, uint64_t offset);

void UnmapHostBacking(uint64_t va, uint64_t size);

// The CPU may read and write [va, va + size) from now on.
void AllowHostAccess(uint64_t va, uint64_t size);

}  // namespace simgpu
