// Allocation and free paths (plain, pitched, managed, async, pools), cuMemGetInfo, and what the
// driver answers about a pointer. The pools themselves are in pool_ops.h, pinned host memory in
// cuda_host_memory.cc. The synchronous allocations and frees are potentially
// unsafe calls during a stream capture (capture_rules.h); the stream-ordered ones are captured.
#include "capture_rules.h"
#include "driver_state.h"
#include "graph_memory.h"
#include "memory_ops.h"
#include "mig_state.h"
#include "pool_ops.h"

using namespace simgpu;

namespace {

CUresult AllocCurrent(CUdeviceptr* dptr, size_t bytes, bool managed) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
  return Allocate(d, ctx, bytes, managed, dptr);
}

// What cuPointerGetAttribute answers about a pointer: the allocation, opened IPC range, VMM
// mapping or pinned host allocation that contains it.
struct PointerRange {
  uint64_t base = 0, size = 0;
  int device = 0;  // physical
  bool managed = false;
  bool legacy_ipc = false;  // cuIpcGetMemHandle can export it
  Context* ctx = nullptr;   // nullptr for VMM mappings, which belong to no context
  bool host = false;        // pinned host memory (its device: its context's)
};

bool FindPointer(const Driver& d, uint64_t ptr, PointerRange* out) {
  auto a = d.allocations.upper_bound(ptr);
  if (a != d.allocations.begin() && ptr < std::prev(a)->first + std::prev(a)->second.size) {
    const Allocation& x = std::prev(a)->second;
    *out = {std::prev(a)->first,
            x.size,
            x.device,
            x.host != nullptr,
            x.pool == nullptr && x.host == nullptr && x.graph_ordinal < 0 && x.external == nullptr,
            x.ctx};
    return true;
  }
  auto o = d.ipc_openings.upper_bound(ptr);
  if (o != d.ipc_openings.begin() && ptr < std::prev(o)->first + std::prev(o)->second.size) {
    const IpcOpening& x = std::prev(o)->second;
    *out = {std::prev(o)->first, x.size, x.device, false, false, x.ctx};
    return true;
  }
  auto m = d.mappings.upper_bound(ptr);
  if (m != d.mappings.begin() && ptr < std::prev(m)->first + std::prev(m)->second.size) {
    const Mapping& x = std::prev(m)->second;
    *out = {std::prev(m)->first, x.size, x.memory->device, false, false, nullptr};
    return true;
  }
  auto h = d.host_allocations.upper_bound(ptr);
  if (h != d.host_allocations.begin() && ptr < std::prev(h)->first + std::prev(h)->second.size) {
    const HostAllocation& x = std::prev(h)->second;
    *out = {std::prev(h)->first, x.size, x.device, false, false, x.ctx, true};
    return true;
  }
  return false;
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
  if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
  if (pool != nullptr && d.pools.count(pool) == 0) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = s->ctx;
  if (pool == nullptr) pool = d.current_pools[static_cast<size_t>(ctx->ordinal)];
  if (s->capture != nullptr) {  // an allocation node of the graph being captured
    if (pool->host) {
      s->capture_invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    KernelNode* node = nullptr;
    return AddMemAllocNode(d, s->capture, pool->ordinal, bytes, &node, dptr);
  }
  if (!pool->host && pool->ordinal != ctx->ordinal) {
    // Allocate on the pool's device, owned by that device's primary context when there is one.
    Context* owner = d.primary[pool->ordinal].ctx;
    if (owner == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    ctx = owner;
  }
  return PoolAllocate(d, pool, ctx, bytes, dptr);
}

CUresult FreeAsync(CUdeviceptr dptr, CUstream hStream, bool per_thread) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
  if (s->capture != nullptr) {  // a free node of the graph being captured
    KernelNode* node = nullptr;
    CUresult r = AddMemFreeNode(d, s->capture, dptr, &node);
    if (r != CUDA_SUCCESS) s->capture_invalidated = true;
    return r;
  }
  // Back to its pool, which keeps it until the next synchronisation (pool_ops.h).
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
  if (d.mig_ordinal >= 0 && d.visible[static_cast<size_t>(d.mig_ordinal)] == ctx->device) {
    // A MIG device: its GPU instance's memory (none once the instance is gone).
    uint64_t mig_total =
        MigDeviceLive(dev, d.mig_gi, d.mig_ci) ? GpuInstanceTotal(dev, d.mig_gi) : 0;
    uint64_t used = GpuInstanceUsed(d.state->file(), ctx->device, d.mig_gi);
    *total = mig_total;
    *free_bytes = mig_total - std::min(mig_total, used);
    return CUDA_SUCCESS;
  }
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
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;  // even of 0
  return FreePointer(d, dptr);
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  PointerRange range;
  if (!FindPointer(d, dptr, &range)) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = range.base;
  if (psize != nullptr) *psize = range.size;
  return CUDA_SUCCESS;
}

// The attributes of device memory that frameworks ask (vLLM and NCCL: the range's start, its
// device, whether legacy IPC can export it); others are CUDA_ERROR_INVALID_VALUE here. Pinned host
// memory is CU_MEMORYTYPE_HOST, reached at the same address by the host and every device (unified
// addressing); its context and device are those it was allocated in, its range the allocation.
// Device memory has no host pointer (CUDA_ERROR_INVALID_VALUE); managed memory's is its address.
CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  PointerRange range;
  if (!FindPointer(d, ptr, &range)) return CUDA_ERROR_INVALID_VALUE;
  int ordinal = OrdinalOf(d, range.device);
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(range.ctx);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = range.host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!range.host && !range.managed) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned*>(data) = range.managed ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = ordinal;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      *static_cast<unsigned*>(data) = range.legacy_ipc ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = range.base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = range.size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<unsigned*>(data) = 1;
      return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
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
  const CUmemLocationType where = props->location.type;
  const bool host = where == CU_MEM_LOCATION_TYPE_HOST || where == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                    where == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
  if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      (where != CU_MEM_LOCATION_TYPE_DEVICE && !host)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!host &&
      (props->location.id < 0 || props->location.id >= static_cast<int>(d.visible.size()))) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  auto* p = new Pool();
  p->host = host;
  p->ordinal = host ? 0 : props->location.id;
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
  PoolDestroy(d, p);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* p = reinterpret_cast<Pool*>(pool);
  if (d.pools.count(p) == 0) return CUDA_ERROR_INVALID_VALUE;
  PoolTrim(d, p, keep);
  return CUDA_SUCCESS;
}

// Reading or writing a pool's attribute is a potentially unsafe call for the driver: a capture in
// global mode (any thread's) or thread-local mode (the caller's) refuses it and is invalidated
// (an H200 with driver 580 invalidated a capture so; cuda-python#2834, cccl#11360).
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
  auto* p = reinterpret_cast<Pool*>(pool);
  if (d.pools.count(p) == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t v = *static_cast<uint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      return CUDA_SUCCESS;  // reuse policies: simgpu reuses an empty chunk whatever they say
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      p->release_threshold = v;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:  // only reset, to the current value, with 0
      if (v != 0) return CUDA_ERROR_INVALID_VALUE;
      p->reserved_high = p->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (v != 0) return CUDA_ERROR_INVALID_VALUE;
      p->used_high = p->used;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
  auto* p = reinterpret_cast<Pool*>(pool);
  if (d.pools.count(p) == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t* out = static_cast<uint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = 1;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *out = p->release_threshold;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *out = p->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *out = p->reserved_high;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *out = p->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *out = p->used_high;
      return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
