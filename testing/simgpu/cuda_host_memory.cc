// Pinned host memory: cuMemHostAlloc, cuMemAllocHost, cuMemFreeHost, cuMemHostRegister(_v2),
// cuMemHostUnregister, cuMemHostGetDevicePointer, cuMemHostGetFlags. The pages are real and
// resident from the allocation or registration (pinned_pages.h), charged to no device and counted
// as the process's host memory for its context's device (`simgpu stat`).
// Every simulated device has unified addressing, so every allocation is mapped for every device at
// its host address, whatever its flags (the driver API's "Unified Addressing": PORTABLE and
// DEVICEMAP change nothing then), and kernels reach it (memory_ops.h AddressableByKernel). The
// allocations and frees are potentially unsafe calls during a stream capture (capture_rules.h).
#include "capture_rules.h"
#include "driver_state.h"
#include "legacy_abi.h"
#include "memory_ops.h"
#include "pinned_pages.h"

using namespace simgpu;

namespace {

constexpr unsigned kHostAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kHostRegisterFlags =
    CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY;

// The pinned allocation that holds `p`, or end().
std::map<uint64_t, HostAllocation>::iterator HostAllocationAt(Driver& d, const void* p) {
  auto at = reinterpret_cast<uint64_t>(p);
  auto it = d.host_allocations.upper_bound(at);
  if (it == d.host_allocations.begin()) return d.host_allocations.end();
  --it;
  return at < it->first + it->second.size ? it : d.host_allocations.end();
}

// Whether [p, p + bytes) overlaps a pinned allocation or registered range.
bool OverlapsPinned(const Driver& d, uint64_t p, uint64_t bytes) {
  auto it = d.host_allocations.lower_bound(p + bytes);
  if (it == d.host_allocations.begin()) return false;
  --it;  // the last one starting before the end
  return it->first + it->second.size > p;
}

}  // namespace

extern "C" {

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int flags) {
  if (pp == nullptr || bytesize == 0 || (flags & ~kHostAllocFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  {
    std::lock_guard<std::mutex> guard(d.mu);
    Context* ctx = nullptr;
    if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
  }
  // Writing the pages in takes a while for large allocations: outside the driver's lock.
  void* p = AllocPinnedPages(bytesize);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) {  // destroyed meanwhile
    FreePinnedPages(p, bytesize);
    return r;
  }
  uint64_t page = PageBytes();
  HostAllocation a{bytesize, (bytesize + page - 1) / page * page, flags, ctx, ctx->device};
  {
    SharedState::Lock lock(*d.state);
    if (!d.state->ChargeHost(lock, a.device, a.mapped)) {
      FreePinnedPages(p, bytesize);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  d.host_allocations[reinterpret_cast<uint64_t>(p)] = a;
  *pp = p;
  return CUDA_SUCCESS;
}

// A null pointer is accepted and frees nothing, as free() does; anything else must be the start of
// a live pinned allocation.
CUresult cuMemFreeHost(void* p) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
  if (p == nullptr) return CUDA_SUCCESS;
  auto it = d.host_allocations.find(reinterpret_cast<uint64_t>(p));
  if (it == d.host_allocations.end() || it->second.registered) return CUDA_ERROR_INVALID_VALUE;
  FreeHostAllocation(d, it);
  return CUDA_SUCCESS;
}

// Pins the program's own memory: every page resident (pinned_pages.h PinRange), counted as host
// memory like an allocation, mapped for every device at its address. I/O memory (another PCIe
// device's) does not exist here: CUDA_ERROR_NOT_SUPPORTED.
CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int flags) {
  if (p == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  if ((flags & ~kHostRegisterFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto base = reinterpret_cast<uint64_t>(p);
  if (base + bytesize < base) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  {
    std::lock_guard<std::mutex> guard(d.mu);
    Context* ctx = nullptr;
    if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
    if (OverlapsPinned(d, base, bytesize)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  // Faulting the pages in takes a while for large ranges: outside the driver's lock.
  switch (PinRange(p, bytesize, (flags & CU_MEMHOSTREGISTER_READ_ONLY) != 0)) {
    case PinOutcome::kPinned:
      break;
    case PinOutcome::kShort:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case PinOutcome::kBadRange:
      return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  if (OverlapsPinned(d, base, bytesize)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  uint64_t page = PageBytes();
  uint64_t first = base / page * page;
  uint64_t end = (base + bytesize + page - 1) / page * page;
  HostAllocation a{bytesize, end - first, flags, ctx, ctx->device, true};
  SharedState::Lock lock(*d.state);
  if (!d.state->ChargeHost(lock, a.device, a.mapped)) return CUDA_ERROR_OUT_OF_MEMORY;
  d.host_allocations[base] = a;
  return CUDA_SUCCESS;
}

// The first ABI (CUDA 4.0) wanted the range aligned to pages.
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int flags) {
  uint64_t page = PageBytes();
  if (reinterpret_cast<uint64_t>(p) % page != 0 || bytesize % page != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return cuMemHostRegister_v2(p, bytesize, flags);
}

// `p` must be the start of a registered range.
CUresult cuMemHostUnregister(void* p) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = d.host_allocations.find(reinterpret_cast<uint64_t>(p));
  if (it == d.host_allocations.end() || !it->second.registered) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  FreeHostAllocation(d, it);
  return CUDA_SUCCESS;
}

// With unified addressing the device pointer of mapped host memory is its host pointer (any
// pointer into an allocation or registered range, not only its start: every simulated device has
// CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM). The flags must be 0.
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int flags) {
  if (pdptr == nullptr || p == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  if (HostAllocationAt(d, p) == d.host_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

// The flags the allocation holding `p` was made with (a registered range is no allocation:
// CUDA_ERROR_INVALID_VALUE, as the driver documents the call for cuMemHostAlloc memory).
CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  if (pFlags == nullptr || p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  auto it = HostAllocationAt(d, p);
  if (it == d.host_allocations.end() || it->second.registered) return CUDA_ERROR_INVALID_VALUE;
  *pFlags = it->second.flags;
  return CUDA_SUCCESS;
}

}  // extern "C"
