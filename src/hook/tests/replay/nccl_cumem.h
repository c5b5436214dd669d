// NCCL's cuMem buffers as its sources make, share and free them (src/include/alloc.h
// ncclCuMemAlloc / ncclCuMemHostAlloc / ncclCuMemFree, the proxy's descriptor import), for the
// replays of its transports: each scenario adds the access its transport sets.
#ifndef TESSERA_HOOK_TESTS_REPLAY_NCCL_CUMEM_H_
#define TESSERA_HOOK_TESTS_REPLAY_NCCL_CUMEM_H_

#include <cstdint>

#include "replay_calls.h"

namespace tessera::replay {

struct CuMemBuffer {
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
  uint64_t size = 0;
};

// A pinned allocation at `location` requesting POSIX file descriptors.
CUmemAllocationProp SharedProp(CUmemLocationType type, int id);

// The minimum granularity of `prop` (2 MiB when the driver says none).
uint64_t MinimumGranularity(Calls& calls, const CUmemAllocationProp& prop);

// cuMemCreate of `bytes` rounded up to the granularity, cuMemAddressReserve aligned to it,
// cuMemMap. No access is set.
CuMemBuffer CreateMapped(Calls& calls, const CUmemAllocationProp& prop, uint64_t bytes);

// cuMemImportFromShareableHandle of descriptor `fd` (closed after), cuMemAddressReserve with
// alignment 0, cuMemMap; `prop` (the owner's) gives the size's granularity. No access is set.
CuMemBuffer ImportMapped(Calls& calls, const CUmemAllocationProp& prop, int fd, uint64_t bytes);

// cuMemSetAccess of the whole buffer, read and write, for one location.
void SetAccess(Calls& calls, const CuMemBuffer& b, CUmemLocationType type, int id);

// ncclCuMemFree: cuMemRetainAllocationHandle on the address, cuMemRelease of that reference,
// cuMemGetAddressRange for the size, cuMemUnmap, cuMemRelease (the creation or import
// reference), cuMemAddressFree.
void FreeAsNccl(Calls& calls, const CuMemBuffer& b);

}  // namespace tessera::replay

#endif  // TESSERA_HOOK_TESTS_REPLAY_NCCL_CUMEM_H_
