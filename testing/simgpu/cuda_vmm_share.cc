// VMM memory shared between processes, as the driver API documents it: a cuMemCreate handle made
// with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR among its requested types is exported as a file
// descriptor (a new one each call; the program closes it), which another process (or this one)
// imports as a handle of its own on the same memory; cuMemRetainAllocationHandle takes a further
// reference to a mapped handle; cuMemGetAllocationPropertiesFromHandle describes one. The memory
// lives while any process holds a reference (shared_state.h ShareVmm): charged to its creator
// while it holds it, then counted by the device alone until the last holder lets go. A
// host-located handle's descriptor opens the memfd of its bytes (host_backing.h), so that every
// process that imports it maps the same host memory.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "driver_state.h"
#include "host_backing.h"
#include "multicast_ops.h"
#include "vmm_share_ops.h"

using namespace simgpu;

namespace {

constexpr uint64_t kFdMagic = 0x31564d4d47495353ull;  // what a descriptor's file begins with

struct FdContent {
  uint64_t magic;
  uint64_t id;
};

// Makes `m` shared (once). Needs mu.
CUresult Share(Driver& d, PhysicalMemory* m) {
  if (m->shared_id != 0) return CUDA_SUCCESS;
  VmmShare what{};
  what.device = static_cast<uint32_t>(m->device);
  what.bytes = m->charged ? m->size : 0;
  what.size = m->size;
  what.location_type = m->prop.location.type;
  what.location_id = m->prop.location.id;
  SharedState::Lock lock(*d.state);
  m->shared_id = d.state->ShareVmm(lock, what);
  return m->shared_id != 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

}  // namespace

bool simgpu::SharedVmmIdOf(int fd, uint64_t* id) {
  FdContent content{};
  if (pread(fd, &content, sizeof(content), 0) != static_cast<ssize_t>(sizeof(content)) ||
      content.magic != kFdMagic) {
    return false;
  }
  *id = content.id;
  return true;
}

extern "C" {

CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags) {
  if (shareableHandle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  auto* m = reinterpret_cast<PhysicalMemory*>(handle);
  if (d.physical.count(m) == 0 || m->refs == 0) return CUDA_ERROR_INVALID_VALUE;
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      (m->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    return CUDA_ERROR_INVALID_VALUE;  // only the types asked for at creation can be exported
  }
  if (CUresult r = Share(d, m); r != CUDA_SUCCESS) return r;
  // A new open file each call; host memory's is its memfd, whose header page carries the id.
  int fd = m->host_fd >= 0
               ? open(("/proc/self/fd/" + std::to_string(m->host_fd)).c_str(), O_RDWR | O_CLOEXEC)
               : memfd_create("simgpu-vmm", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  FdContent content{kFdMagic, m->shared_id};
  static_assert(sizeof(content) <= kHostBackingHeader);
  if (pwrite(fd, &content, sizeof(content), 0) != static_cast<ssize_t>(sizeof(content))) {
    close(fd);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  *static_cast<int*>(shareableHandle) = fd;
  return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                        CUmemAllocationHandleType shHandleType) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (shHandleType == CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
  if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
  uint64_t id = 0;
  if (!SharedVmmIdOf(fd, &id)) return CUDA_ERROR_INVALID_VALUE;  // not one this driver exported
  VmmShare share{};
  {
    SharedState::Lock lock(*d.state);
    d.state->Sweep(lock, SharedState::SweepMode::kQuick);  // a holder may have died
    if (!d.state->HoldVmm(lock, id, &share)) return CUDA_ERROR_INVALID_VALUE;
  }
  auto m = std::make_unique<PhysicalMemory>();
  if (share.location_type != CU_MEM_LOCATION_TYPE_DEVICE) {
    m->host_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);  // the program closes its descriptor
    if (m->host_fd < 0) {
      SharedState::Lock lock(*d.state);
      d.state->DropVmm(lock, share.id);
      return CUDA_ERROR_OPERATING_SYSTEM;
    }
  }
  m->device = static_cast<int>(share.device);
  m->size = share.size;
  m->shared_id = share.id;
  m->multicast = IsMulticast(d, share.id);
  m->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  m->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  m->prop.location.type = static_cast<CUmemLocationType>(share.location_type);
  m->prop.location.id = share.location_type == CU_MEM_LOCATION_TYPE_DEVICE ? OrdinalOf(d, m->device)
                                                                           : share.location_id;
  d.physical.insert(m.get());
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(m.release());
  return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  uint64_t at = reinterpret_cast<uint64_t>(addr);
  auto it = d.mappings.upper_bound(at);
  if (it == d.mappings.begin() || at >= std::prev(it)->first + std::prev(it)->second.size) {
    return CUDA_ERROR_INVALID_VALUE;  // not mapped by cuMemMap (cuMemAlloc memory too)
  }
  PhysicalMemory* m = std::prev(it)->second.memory;
  ++m->refs;
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(m);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  auto* m = reinterpret_cast<PhysicalMemory*>(handle);
  if (d.physical.count(m) == 0 || m->refs == 0) return CUDA_ERROR_INVALID_VALUE;
  *prop = m->prop;
  return CUDA_SUCCESS;
}

}  // extern "C"
