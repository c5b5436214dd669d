#include "memory_ops.h"

#include <sys/mman.h>

#include "ipc_ops.h"

namespace simgpu {

CUresult Allocate(Driver& d, Context* ctx, size_t bytes, bool managed, CUdeviceptr* out) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(d, ctx->device); r != CUDA_SUCCESS) return r;
  uint64_t charged = RoundUpToGranule(bytes);
  if (charged < bytes) return CUDA_ERROR_OUT_OF_MEMORY;  // overflow
  {
    SharedState::Lock lock(*d.state);
    if (!d.state->Charge(lock, ctx->device, charged)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  uint64_t base = 0;
  void* host = nullptr;
  if (managed) {
    host = mmap(nullptr, charged, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (host == MAP_FAILED) host = nullptr;
    base = reinterpret_cast<uint64_t>(host);
  } else {
    base = d.address_space.Allocate(charged, 0);
  }
  if (base == 0) {
    SharedState::Lock lock(*d.state);
    d.state->Uncharge(lock, ctx->device, charged);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  d.allocations[base] = Allocation{ctx->device, bytes, charged, ctx, host};
  *out = base;
  return CUDA_SUCCESS;
}

bool InDeviceAddressRange(uint64_t ptr) {
  return ptr >= AddressSpace::kBase && ptr < AddressSpace::kBase + AddressSpace::kSize;
}

bool ValidDeviceRange(const Driver& d, uint64_t ptr, size_t bytes) {
  if (ptr == 0) return false;
  uint64_t end = ptr + bytes;
  if (end < ptr) return false;
  auto it = d.allocations.upper_bound(ptr);
  if (it != d.allocations.begin()) {
    --it;
    if (ptr >= it->first && end <= it->first + it->second.size) return true;
  }
  if (IpcOpeningAt(d, ptr, bytes) != nullptr) return true;
  // VMM: a run of adjacent mappings may cover the range.
  uint64_t at = ptr;
  while (true) {
    auto m = d.mappings.upper_bound(at);
    if (m == d.mappings.begin()) return false;
    --m;
    if (at >= m->first + m->second.size) return false;
    at = m->first + m->second.size;
    if (at >= end) return true;
  }
}

}  // namespace simgpu
