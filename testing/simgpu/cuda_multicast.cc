// Multicast objects (NVLink SHARP), as the driver API documents them, on devices of an NVLink
// group (peer_topology.h: CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED): cuMulticastCreate makes a
// handle for a team of numDevices devices and `size` bytes per device; cuMulticastAddDevice adds
// one (a device of another NVLink group, a clique of its own, is CUDA_ERROR_INVALID_DEVICE); the
// binds (cuMulticastBindMem, cuMulticastBindAddr) and cuMemMap of the handle wait until the whole
// team is added; each device binds cuMemCreate memory of its own; cuMulticastUnbind undoes it.
// The object holds no memory: the bound memory is charged where it lives, to its creator. The
// handle is shared between processes as any VMM handle is (cuMemExportToShareableHandle with a
// POSIX file descriptor) and goes with its last holder.
#include <chrono>
#include <thread>

#include "driver_state.h"
#include "multicast_ops.h"
#include "peer_topology.h"

using namespace simgpu;

namespace {

constexpr unsigned long long kKnownHandleTypes =
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC;

Multicast* Find(StateFile& f, uint64_t id) {
  for (Multicast& m : f.multicasts) {
    if (id != 0 && m.id == id) return &m;
  }
  return nullptr;
}

// The live multicast handle `handle` of this process, or nullptr. Needs mu.
PhysicalMemory* McHandle(Driver& d, CUmemGenericAllocationHandle handle) {
  auto* m = reinterpret_cast<PhysicalMemory*>(handle);
  return d.physical.count(m) != 0 && m->refs > 0 && m->multicast ? m : nullptr;
}

bool Aligned(uint64_t v) {
  return v % kGranule == 0;
}

// Binds `size` bytes of `mem` (from `mem_offset`) at `mc_offset` of multicast object `mc`.
CUresult Bind(CUmemGenericAllocationHandle mc, size_t mc_offset, PhysicalMemory* mem,
              size_t mem_offset, size_t size) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  PhysicalMemory* m = McHandle(d, mc);
  if (m == nullptr || d.physical.count(mem) == 0 || mem->refs == 0 || mem->multicast ||
      mem->prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE || size == 0 || !Aligned(size) ||
      !Aligned(mc_offset) || !Aligned(mem_offset) || mem_offset + size > mem->size ||
      mc_offset + size > m->size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  SharedState::Lock lock(*d.state);
  Multicast* team = Find(d.state->file(), m->shared_id);
  if (team == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint32_t bit = 1u << mem->device;
  if ((team->added & bit) == 0) return CUDA_ERROR_INVALID_DEVICE;  // not of the team
  if (team->bound & bit) return CUDA_ERROR_ALREADY_MAPPED;
  team->bound |= bit;
  return CUDA_SUCCESS;
}

}  // namespace

namespace simgpu {

bool IsMulticast(Driver& d, uint64_t id) {
  SharedState::Lock lock(*d.state);
  return Find(d.state->file(), id) != nullptr;
}

void WaitForMulticastTeam(Driver& d, CUmemGenericAllocationHandle handle) {
  for (;;) {
    {
      std::lock_guard<std::mutex> guard(d.mu);
      PhysicalMemory* m = McHandle(d, handle);
      if (m == nullptr) return;
      SharedState::Lock lock(*d.state);
      const Multicast* team = Find(d.state->file(), m->shared_id);
      if (team == nullptr ||
          static_cast<uint32_t>(__builtin_popcount(team->added)) >= team->num_devices) {
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace simgpu

extern "C" {

CUresult cuMulticastGetGranularity(size_t* granularity, const CUmulticastObjectProp* prop,
                                   CUmulticastGranularity_flags option) {
  if (granularity == nullptr || prop == nullptr ||
      (option != CU_MULTICAST_GRANULARITY_MINIMUM &&
       option != CU_MULTICAST_GRANULARITY_RECOMMENDED)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  *granularity = kGranule;
  return CUDA_SUCCESS;
}

CUresult cuMulticastCreate(CUmemGenericAllocationHandle* mcHandle,
                           const CUmulticastObjectProp* prop) {
  if (mcHandle == nullptr || prop == nullptr || prop->numDevices == 0 ||
      prop->numDevices > static_cast<unsigned>(kMaxDevices) || prop->size == 0 ||
      !Aligned(prop->size) || prop->flags != 0 || (prop->handleTypes & ~kKnownHandleTypes) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (prop->handleTypes & CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  bool supported = false;
  for (int device : d.visible) supported = supported || MulticastSupported(d.state->file(), device);
  if (!supported) return CUDA_ERROR_NOT_SUPPORTED;
  auto m = std::make_unique<PhysicalMemory>();
  m->size = prop->size;
  m->multicast = true;
  m->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  m->prop.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(prop->handleTypes);
  VmmShare what{};
  what.size = prop->size;
  {
    SharedState::Lock lock(*d.state);
    m->shared_id = d.state->ShareVmm(lock, what);
    Multicast* slot = nullptr;
    for (Multicast& t : d.state->file().multicasts) {
      if (t.id == 0) {
        slot = &t;
        break;
      }
    }
    if (m->shared_id == 0 || slot == nullptr) {
      if (m->shared_id != 0) d.state->DropVmm(lock, m->shared_id);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *slot = Multicast{m->shared_id, prop->size, prop->numDevices, 0, 0, 0};
  }
  d.physical.insert(m.get());
  *mcHandle = reinterpret_cast<CUmemGenericAllocationHandle>(m.release());
  return CUDA_SUCCESS;
}

CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  PhysicalMemory* m = McHandle(d, mcHandle);
  if (m == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  int device = d.visible[static_cast<size_t>(dev)];
  StateFile& f = d.state->file();
  if (!MulticastSupported(f, device)) return CUDA_ERROR_NOT_SUPPORTED;
  SharedState::Lock lock(*d.state);
  Multicast* team = Find(f, m->shared_id);
  if (team == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint32_t bit = 1u << device;
  if (team->added & bit) return CUDA_SUCCESS;
  for (int other = 0; other < kMaxDevices; ++other) {
    if ((team->added & (1u << other)) && !NvlinkPeers(f, device, other)) {
      return CUDA_ERROR_INVALID_DEVICE;  // not of the same clique
    }
  }
  if (static_cast<uint32_t>(__builtin_popcount(team->added)) >= team->num_devices) {
    return CUDA_ERROR_INVALID_VALUE;  // the team is complete
  }
  team->added |= bit;
  return CUDA_SUCCESS;
}

CUresult cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                            CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                            unsigned long long flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  WaitForMulticastTeam(TheDriver(), mcHandle);
  return Bind(mcHandle, mcOffset, reinterpret_cast<PhysicalMemory*>(memHandle), memOffset, size);
}

CUresult cuMulticastBindAddr(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                             CUdeviceptr memptr, size_t size, unsigned long long flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  WaitForMulticastTeam(d, mcHandle);
  PhysicalMemory* mem = nullptr;
  uint64_t offset = 0;
  {
    std::lock_guard<std::mutex> guard(d.mu);
    auto it = d.mappings.upper_bound(memptr);
    if (it == d.mappings.begin() || memptr >= std::prev(it)->first + std::prev(it)->second.size) {
      return CUDA_ERROR_INVALID_VALUE;  // not memory mapped with cuMemMap
    }
    mem = std::prev(it)->second.memory;
    offset = memptr - std::prev(it)->first;
  }
  return Bind(mcHandle, mcOffset, mem, offset, size);
}

CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset,
                           size_t size) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  PhysicalMemory* m = McHandle(d, mcHandle);
  if (m == nullptr || size == 0 || !Aligned(size) || !Aligned(mcOffset) ||
      mcOffset + size > m->size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (dev < 0 || dev >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  SharedState::Lock lock(*d.state);
  Multicast* team = Find(d.state->file(), m->shared_id);
  uint32_t bit = 1u << d.visible[static_cast<size_t>(dev)];
  if (team == nullptr || (team->bound & bit) == 0) return CUDA_ERROR_INVALID_VALUE;
  team->bound &= ~bit;
  return CUDA_SUCCESS;
}

}  // extern "C"
