#include "nccl_cumem.h"

#include <unistd.h>

namespace tessera::replay {

CUmemAllocationProp SharedProp(CUmemLocationType type, int id) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = type;
  prop.location.id = id;
  return prop;
}

uint64_t MinimumGranularity(Calls& calls, const CUmemAllocationProp& prop) {
  size_t g = 0;
  calls.Note("cuMemGetAllocationGranularity",
             calls.api().MemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return g == 0 ? 2ull << 20 : g;
}

CuMemBuffer CreateMapped(Calls& calls, const CUmemAllocationProp& prop, uint64_t bytes) {
  const hooktest::Api& api = calls.api();
  uint64_t g = MinimumGranularity(calls, prop);
  CuMemBuffer b;
  b.size = (bytes + g - 1) / g * g;
  calls.Note("cuMemCreate", api.MemCreate(&b.handle, b.size, &prop, 0));
  calls.Note("cuMemAddressReserve", api.MemAddressReserve(&b.va, b.size, g, 0, 0));
  calls.Note("cuMemMap", api.MemMap(b.va, b.size, 0, b.handle, 0));
  return b;
}

CuMemBuffer ImportMapped(Calls& calls, const CUmemAllocationProp& prop, int fd, uint64_t bytes) {
  const hooktest::Api& api = calls.api();
  uint64_t g = MinimumGranularity(calls, prop);
  CuMemBuffer b;
  b.size = (bytes + g - 1) / g * g;
  calls.Note("cuMemImportFromShareableHandle",
             api.MemImportFromShareableHandle(&b.handle,
                                              reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(fd);
  calls.Note("cuMemAddressReserve", api.MemAddressReserve(&b.va, b.size, 0, 0, 0));
  calls.Note("cuMemMap", api.MemMap(b.va, b.size, 0, b.handle, 0));
  return b;
}

void SetAccess(Calls& calls, const CuMemBuffer& b, CUmemLocationType type, int id) {
  CUmemAccessDesc access{};
  access.location.type = type;
  access.location.id = id;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  calls.Note("cuMemSetAccess", calls.api().MemSetAccess(b.va, b.size, &access, 1));
}

void FreeAsNccl(Calls& calls, const CuMemBuffer& b) {
  const hooktest::Api& api = calls.api();
  CUmemGenericAllocationHandle h = 0;
  calls.Note("cuMemRetainAllocationHandle",
             api.MemRetainAllocationHandle(&h, reinterpret_cast<void*>(b.va)));
  calls.Note("cuMemRelease", api.MemRelease(h));
  size_t size = 0;
  calls.Note("cuMemGetAddressRange", api.MemGetAddressRange(nullptr, &size, b.va));
  calls.Note("cuMemUnmap", api.MemUnmap(b.va, size));
  calls.Note("cuMemRelease", api.MemRelease(h));
  calls.Note("cuMemAddressFree", api.MemAddressFree(b.va, b.size));
}

}  // namespace tessera::replay
