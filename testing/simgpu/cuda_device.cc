// Device queries.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/strings.h"
#include "driver_state.h"
#include "mig_state.h"
#include "peer_topology.h"

using namespace simgpu;

namespace {

// Physical device of ordinal `dev`, checking init and range. Needs mu.
CUresult Physical(const Driver& d, CUdevice dev, const DeviceState** out) {
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  *out = &d.state->file().devices[d.visible[dev]];
  return CUDA_SUCCESS;
}

// The process's MIG device is ordinal `dev` (visible_devices.h). Needs mu.
bool IsMig(const Driver& d, CUdevice dev) {
  return d.mig_ordinal >= 0 && dev == d.mig_ordinal;
}

CUresult UuidBytes(CUuuid* uuid, CUdevice dev) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, dev, &s); r != CUDA_SUCCESS) return r;
  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (a MIG device's "MIG-...") -> 16 bytes.
  std::string text = IsMig(d, dev) ? MigDeviceUuid(*s, d.mig_gi, d.mig_ci) : s->uuid;
  std::string hex;
  for (const char* p = text.c_str() + 4; *p != '\0'; ++p) {
    if (*p != '-') hex += *p;
  }
  for (int i = 0; i < 16; ++i) {
    uuid->bytes[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, ordinal, &s); r != CUDA_SUCCESS) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = static_cast<int>(d.visible.size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, dev, &s); r != CUDA_SUCCESS) return r;
  if (IsMig(d, dev)) {
    // As NVML names a MIG device: "NVIDIA H100 80GB HBM3 MIG 1g.10gb".
    SharedState::Lock lock(*d.state);
    std::string mig_name = MigDeviceLive(*s, d.mig_gi, d.mig_ci)
                               ? MigDeviceName(*s, d.mig_gi, d.mig_ci)
                               : std::string(s->model) + " MIG";
    snprintf(name, static_cast<size_t>(len), "%s", mig_name.c_str());
    return CUDA_SUCCESS;
  }
  snprintf(name, static_cast<size_t>(len), "%s", s->model);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  return UuidBytes(uuid, dev);
}
CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return UuidBytes(uuid, dev);
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, dev, &s); r != CUDA_SUCCESS) return r;
  snprintf(pciBusId, static_cast<size_t>(len), "0000:%02x:00.0", s->pci_bus);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  for (size_t i = 0; i < d.visible.size(); ++i) {
    const DeviceState& s = d.state->file().devices[d.visible[i]];
    if (domain == 0 && s.pci_bus == bus && device == 0 && function == 0) {
      *dev = static_cast<CUdevice>(i);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, dev, &s); r != CUDA_SUCCESS) return r;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *pi = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *pi = 1980000;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *pi = static_cast<int>(s->sms);
      if (IsMig(d, dev)) {  // the compute instance's SMs
        SharedState::Lock lock(*d.state);
        *pi = MigDeviceLive(*s, d.mig_gi, d.mig_ci) ? MigDeviceSms(*s, d.mig_gi, d.mig_ci) : 0;
      }
      break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *pi = static_cast<int>(s->pci_bus);
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *pi = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    // Pinned host memory is mapped for every device at its host address (cuda_host_memory.cc).
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *pi = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:  // no simulated device is on a fabric
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:  // the simulated machine has one NUMA node
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:  // NVSwitch: a device of an NVLink group
      *pi = MulticastSupported(d.state->file(), d.visible[static_cast<size_t>(dev)]) ? 1 : 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, dev, &s); r != CUDA_SUCCESS) return r;
  *bytes = s->memory_total;
  if (IsMig(d, dev)) {  // the GPU instance's memory
    SharedState::Lock lock(*d.state);
    *bytes = MigDeviceLive(*s, d.mig_gi, d.mig_ci) ? GpuInstanceTotal(*s, d.mig_gi) : 0;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, dev, &s); r != CUDA_SUCCESS) return r;
  *major = 9;
  *minor = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, dev, &s); r != CUDA_SUCCESS) return r;
  *pool_out = reinterpret_cast<CUmemoryPool>(d.default_pools[dev].get());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, dev, &s); r != CUDA_SUCCESS) return r;
  *pool_out = reinterpret_cast<CUmemoryPool>(d.current_pools[dev]);
  return CUDA_SUCCESS;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  const DeviceState* s = nullptr;
  if (CUresult r = Physical(d, dev, &s); r != CUDA_SUCCESS) return r;
  auto* p = reinterpret_cast<Pool*>(pool);
  if (d.pools.count(p) == 0 || p->host || p->ordinal != dev) return CUDA_ERROR_INVALID_VALUE;
  d.current_pools[dev] = p;
  return CUDA_SUCCESS;
}

}  // extern "C"
