// Allocation and free paths (plain, pitched, managed, async, pools, host), cuMemGetInfo.
#include <cstdlib>

#include "driver_state.h"
#include "memory_ops.h"

using namespace simgpu;

namespace {

CUresult AllocCurrent(CUdeviceptr* dptr, size_t bytes, bool managed) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  return Allocate(d, ctx, bytes, managed, dptr);
}

CUresult FreePointer(Driver& d, CUdeviceptr dptr) {
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dptr == 0) return CUDA_SUCCESS;
  auto it = d.allocations.find(dptr);
  if (it == d.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  FreeAllocation(d, it);
  return CUDA_SUCCESS;
}

CUresult AllocAsync(CUdeviceptr* dptr, size_t bytes, Pool* pool, CUstream hStream,
                    bool per_thread) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (pool != nullptr && d.pools.count(pool) == 0) return CUDA_ERROR_INVALID_VALUE;
  if (s->capture != nullptr) {
    // Memory nodes in captured graphs are not simulated.
    s->capture_invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  Context* ctx = s->ctx;
  if (pool != nullptr && pool->ordinal != ctx->ordinal) {
    // Allocate on the pool's device, owned by that device's primary context when there is one.
    Context* owner = d.primary[pool->ordinal].ctx;
    if (owner == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    ctx = owner;
  }
  return Allocate(d, ctx, bytes, false, dptr);
}

CUresult FreeAsync(CUdeviceptr dptr, CUstream hStream, bool per_thread) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (s->capture != nullptr) {
    s->capture_invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  // Pools keep nothing cached: freed memory returns to the device at once (release threshold 0).
  return FreePointer(d, dptr);
}

}  // namespace

extern "C" {

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  if (free_bytes == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  SharedState::Lock lock(*d.state);
  d.state->Sweep(lock, SharedState::SweepMode::kQuick);
  const DeviceState& dev = d.state->file().devices[ctx->device];
  *total = dev.memory_total;
  *free_bytes = dev.memory_total - std::min(dev.memory_total, dev.used_bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return AllocCurrent(dptr, bytesize, false);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  if (pPitch == nullptr || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t pitch = (WidthInBytes + 511) / 512 * 512;  // rows aligned like the real driver's
  if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = AllocCurrent(dptr, pitch * Height, false);
  if (r == CUDA_SUCCESS) *pPitch = pitch;
  return r;
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (flags != 1 /* CU_MEM_ATTACH_GLOBAL */ && flags != 2 /* CU_MEM_ATTACH_HOST */) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return AllocCurrent(dptr, bytesize, true);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  return FreePointer(d, dptr);
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = d.allocations.upper_bound(dptr);
  if (it == d.allocations.begin()) return CUDA_ERROR_NOT_FOUND;
  --it;
  if (dptr >= it->first + it->second.size) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = it->first;
  if (psize != nullptr) *psize = it->second.size;
  return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return AllocAsync(dptr, bytesize, nullptr, hStream, false);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return AllocAsync(dptr, bytesize, nullptr, hStream, true);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AllocAsync(dptr, bytesize, reinterpret_cast<Pool*>(pool), hStream, false);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AllocAsync(dptr, bytesize, reinterpret_cast<Pool*>(pool), hStream, true);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return FreeAsync(dptr, hStream, false);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return FreeAsync(dptr, hStream, true);
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  if (pool == nullptr || props == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (props->location.id < 0 || props->location.id >= static_cast<int>(d.visible.size())) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  auto* p = new Pool();
  p->ordinal = props->location.id;
  d.pools.insert(p);
  *pool = reinterpret_cast<CUmemoryPool>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  auto* p = reinterpret_cast<Pool*>(pool);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (d.pools.count(p) == 0 || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  d.pools.erase(p);
  delete p;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  // Pools cache nothing here (freed memory goes back at once), so there is nothing to trim.
  return d.pools.count(reinterpret_cast<Pool*>(pool)) != 0 ? CUDA_SUCCESS
                                                           : CUDA_ERROR_INVALID_VALUE;
}

// Host memory: ordinary process memory (no device memory is charged).
CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int) {
  if (pp == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  {
    std::lock_guard<std::mutex> guard(d.mu);
    Context* ctx = nullptr;
    if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  }
  *pp = malloc(bytesize);
  return *pp != nullptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFreeHost(void* p) {
  free(p);
  return CUDA_SUCCESS;
}

}  // extern "C"
