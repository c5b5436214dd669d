// Virtual memory management (cuMemCreate/Release, address reserve/free, map/unmap, access,
// granularity) and arrays. A cuMemCreate handle with a device location charges device memory; a
// host location charges no device memory and is pinned host memory (resident from its creation,
// counted as the process's host memory) the CPU reaches at its mappings once access is set for a
// host location (host_backing.h); kernels reach a mapping once access is set for their device.
// Arrays charge their byte size rounded up to the granule.
#include <unistd.h>

#include "driver_state.h"
#include "host_backing.h"
#include "multicast_ops.h"
#include "pinned_pages.h"

using namespace simgpu;

namespace {

constexpr unsigned kKnownHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
                                       CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT |
                                       CU_MEM_HANDLE_TYPE_FABRIC;

void ReleaseIfUnused(Driver& d, PhysicalMemory* m) {
  if (m->refs > 0 || m->mappings > 0) return;
  if (m->shared_id != 0) {
    SharedState::Lock lock(*d.state);
    d.state->DropVmm(lock, m->shared_id);  // the memory goes with its last holder
  } else if (m->charged) {
    SharedState::Lock lock(*d.state);
    d.state->Uncharge(lock, m->device, m->size);
  }
  if (m->host_device >= 0) {
    SharedState::Lock lock(*d.state);
    d.state->UnchargeHost(lock, m->host_device, m->size);
  }
  if (m->host_fd >= 0) close(m->host_fd);
  d.physical.erase(m);
  delete m;
}

// A live handle of this process (not released), or nullptr.
PhysicalMemory* LiveHandle(Driver& d, CUmemGenericAllocationHandle handle) {
  auto* m = reinterpret_cast<PhysicalMemory*>(handle);
  return d.physical.count(m) != 0 && m->refs > 0 ? m : nullptr;
}

size_t FormatBytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
  }
  return 0;
}

// Bytes of a width x height x depth array (0 dimensions count as 1), or 0 when invalid.
uint64_t ArrayBytes(size_t w, size_t h, size_t depth, CUarray_format f, unsigned channels) {
  size_t elem = FormatBytes(f);
  if (w == 0 || elem == 0 || (channels != 1 && channels != 2 && channels != 4)) return 0;
  __uint128_t bytes =
      static_cast<__uint128_t>(w) * (h == 0 ? 1 : h) * (depth == 0 ? 1 : depth) * elem * channels;
  return bytes > (static_cast<__uint128_t>(1) << 62) ? 0 : static_cast<uint64_t>(bytes);
}

CUresult NewArray(uint64_t bytes, void** handle) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  if (CUresult r = CheckDevice(d, ctx->device); r != CUDA_SUCCESS) return r;
  uint64_t charged = RoundUpToGranule(bytes);
  {
    SharedState::Lock lock(*d.state);
    if (!d.state->Charge(lock, ctx->device, charged)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto* a = new ArrayAlloc{ctx->device, charged};
  d.arrays.insert(a);
  *handle = a;
  return CUDA_SUCCESS;
}

CUresult DestroyArray(void* handle) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* a = static_cast<ArrayAlloc*>(handle);
  if (d.arrays.count(a) == 0) return CUDA_ERROR_INVALID_HANDLE;
  {
    SharedState::Lock lock(*d.state);
    d.state->Uncharge(lock, a->device, a->charged);
  }
  d.arrays.erase(a);
  delete a;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
      option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *granularity = kGranule;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  if (handle == nullptr || prop == nullptr || flags != 0 || size == 0 || size % kGranule != 0 ||
      prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      (prop->requestedHandleTypes & ~kKnownHandleTypes) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // No simulated device is on a fabric (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED is 0):
  // NCCL and PyTorch ask for fabric handles first and fall back to file descriptors on this.
  if (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto m = std::make_unique<PhysicalMemory>();
  m->size = size;
  m->prop = *prop;
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: {
      int ordinal = prop->location.id;
      if (ordinal < 0 || ordinal >= static_cast<int>(d.visible.size())) {
        return CUDA_ERROR_INVALID_DEVICE;
      }
      m->device = d.visible[ordinal];
      if (CUresult r = CheckDevice(d, m->device); r != CUDA_SUCCESS) return r;
      SharedState::Lock lock(*d.state);
      if (!d.state->Charge(lock, m->device, size)) return CUDA_ERROR_OUT_OF_MEMORY;
      m->charged = true;
      break;
    }
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: {
      // Pinned at creation, as the real driver does: resident pages, or out of memory.
      m->host_fd = NewHostBacking(size);
      if (m->host_fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
      if (!PopulateMemfd(m->host_fd, kHostBackingHeader, size)) {
        close(m->host_fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      // Host memory of the device the program works on (its current context's, else its first).
      Context* current = CurrentContext();
      m->host_device =
          current != nullptr && d.contexts.count(current) != 0 ? current->device : d.visible.at(0);
      SharedState::Lock lock(*d.state);
      if (!d.state->ChargeHost(lock, m->host_device, size)) {
        close(m->host_fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      break;
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  d.physical.insert(m.get());
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(m.release());
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  PhysicalMemory* m = LiveHandle(d, handle);
  if (m == nullptr) return CUDA_ERROR_INVALID_VALUE;
  --m->refs;
  ReleaseIfUnused(d, m);
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  if (ptr == nullptr || size == 0 || size % kGranule != 0 || flags != 0 ||
      (alignment & (alignment - 1)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  (void)addr;  // the address is only a hint; like the real driver, simgpu may choose another
  uint64_t base = d.address_space.Allocate(size, alignment);
  if (base == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  d.reservations[base] = size;
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = d.reservations.find(ptr);
  if (it == d.reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto m = d.mappings.lower_bound(ptr);
  if (m != d.mappings.end() && m->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;  // mapped
  d.address_space.Free(ptr, size);
  d.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  if (size == 0 || flags != 0 || ptr % kGranule != 0 || size % kGranule != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  WaitForMulticastTeam(d, handle);  // a multicast object maps once its whole team is added
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  PhysicalMemory* m = LiveHandle(d, handle);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (offset != 0 || size != m->size) return CUDA_ERROR_INVALID_VALUE;  // whole handles only
  auto r = d.reservations.upper_bound(ptr);
  if (r == d.reservations.begin()) return CUDA_ERROR_INVALID_VALUE;
  --r;
  if (ptr + size > r->first + r->second) return CUDA_ERROR_INVALID_VALUE;
  auto next = d.mappings.lower_bound(ptr);
  if (next != d.mappings.end() && next->first < ptr + size) return CUDA_ERROR_ALREADY_MAPPED;
  if (next != d.mappings.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > ptr) return CUDA_ERROR_ALREADY_MAPPED;
  }
  if (m->host_fd >= 0 && !MapHostBacking(m->host_fd, ptr, size, offset)) {
    return CUDA_ERROR_OUT_OF_MEMORY;  // the range is taken in this process's address space
  }
  d.mappings[ptr] = Mapping{size, m};
  ++m->mappings;
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  // The range must be made of whole mappings.
  uint64_t at = ptr;
  auto it = d.mappings.find(ptr);
  while (at < ptr + size) {
    if (it == d.mappings.end() || it->first != at) return CUDA_ERROR_INVALID_VALUE;
    at += it->second.size;
    ++it;
  }
  if (at != ptr + size) return CUDA_ERROR_INVALID_VALUE;
  for (auto m = d.mappings.find(ptr); m != d.mappings.end() && m->first < ptr + size;) {
    PhysicalMemory* mem = m->second.memory;
    if (mem->host_fd >= 0) UnmapHostBacking(m->first, m->second.size);
    --mem->mappings;
    m = d.mappings.erase(m);
    ReleaseIfUnused(d, mem);
  }
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  for (size_t i = 0; i < count; ++i) {
    switch (desc[i].location.type) {
      case CU_MEM_LOCATION_TYPE_DEVICE:
        if (desc[i].location.id < 0 || desc[i].location.id >= static_cast<int>(d.visible.size())) {
          return CUDA_ERROR_INVALID_DEVICE;
        }
        break;
      case CU_MEM_LOCATION_TYPE_HOST:  // the CPU's access (NCCL's host memory)
      case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  uint64_t at = ptr;
  while (at < ptr + size) {
    auto m = d.mappings.upper_bound(at);
    if (m == d.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
    --m;
    if (at >= m->first + m->second.size) return CUDA_ERROR_INVALID_VALUE;
    at = m->first + m->second.size;
  }
  if (size == 0) return CUDA_SUCCESS;
  bool host = false;  // the CPU is granted access
  for (size_t i = 0; i < count; ++i) host |= desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE;
  auto first = std::prev(d.mappings.upper_bound(ptr));  // the mapping holding ptr (checked above)
  for (auto m = first; m != d.mappings.end() && m->first < ptr + size; ++m) {
    if (host && m->second.memory->host_fd >= 0) AllowHostAccess(m->first, m->second.size);
    // The devices whose kernels may address it (`touch_<N>ns` kernels check).
    for (size_t i = 0; i < count; ++i) {
      if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) continue;
      uint32_t bit = 1u << d.visible[desc[i].location.id];
      if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE) {
        m->second.device_access &= ~bit;
      } else {
        m->second.device_access |= bit;
      }
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* desc) {
  if (pHandle == nullptr || desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return NewArray(ArrayBytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels),
                  reinterpret_cast<void**>(pHandle));
}

CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  if (pHandle == nullptr || desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return NewArray(
      ArrayBytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels),
      reinterpret_cast<void**>(pHandle));
}

CUresult cuArrayDestroy(CUarray hArray) {
  return DestroyArray(hArray);
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                unsigned int numMipmapLevels) {
  if (pHandle == nullptr || desc == nullptr || numMipmapLevels == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t total = 0;
  size_t w = desc->Width, h = desc->Height, depth = desc->Depth;
  for (unsigned level = 0; level < numMipmapLevels; ++level) {
    uint64_t bytes = ArrayBytes(w, h, depth, desc->Format, desc->NumChannels);
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    total += bytes;
    w = w > 1 ? w / 2 : 1;
    h = h > 1 ? h / 2 : h;
    depth = depth > 1 ? depth / 2 : depth;
  }
  return NewArray(total, reinterpret_cast<void**>(pHandle));
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray h) {
  return DestroyArray(h);
}

}  // extern "C"
