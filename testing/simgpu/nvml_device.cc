// NVML: init/shutdown, system queries, device handles and device queries.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "clock.h"
#include "common/strings.h"
#include "mig_state.h"
#include "nvml_handles.h"
#include "nvml_mig.h"
#include "peer_topology.h"
#include "timeline.h"

using namespace simgpu;

namespace {

// Looks a device up by a predicate on its state. Lost devices answer NVML_ERROR_GPU_IS_LOST.
template <typename Match>
nvmlReturn_t FindDevice(nvmlDevice_t* device, Match match) {
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s = NvmlState();
  if (s == nullptr) return NVML_ERROR_UNINITIALIZED;
  std::vector<int> present = NvmlPresent();
  SharedState::Lock lock(*s);
  for (int i : present) {
    const DeviceState& d = s->file().devices[i];
    if (!match(i, d)) continue;
    if (d.removed) return NVML_ERROR_GPU_IS_LOST;
    *device = NvmlHandle(i);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

// Normalises "0000:17:00.0", "00000000:17:00.0" and "17:00.0" to the 8-digit-domain form.
std::string CanonicalBusId(const char* text) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (sscanf(text, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) {
    domain = 0;
    if (sscanf(text, "%x:%x.%x", &bus, &dev, &fn) != 3) return "";
  }
  char out[32];
  snprintf(out, sizeof(out), "%08X:%02X:%02X.%X", domain, bus, dev, fn);
  return out;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  return NvmlInit();
}
nvmlReturn_t nvmlInitWithFlags(unsigned int) {
  return NvmlInit();
}
nvmlReturn_t nvmlShutdown(void) {
  return NvmlShutdown();
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_IN_USE:
      return "GPU is currently in use";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient resources";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (NvmlState() == nullptr) return NVML_ERROR_UNINITIALIZED;
  return CopyString("580.65.06", version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = 13000;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s = NvmlState();
  if (s == nullptr) return NVML_ERROR_UNINITIALIZED;
  *deviceCount = static_cast<unsigned>(NvmlPresent().size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  SharedState* s = NvmlState();
  std::vector<int> present = NvmlPresent();
  if (s != nullptr && index >= present.size()) return NVML_ERROR_INVALID_ARGUMENT;
  int physical = s != nullptr ? present[index] : -1;
  return FindDevice(device, [&](int i, const DeviceState&) { return i == physical; });
}

// A GPU's UUID, or a MIG device's (`MIG-...`) as real NVML takes them.
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (uuid == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::string want = tessera::ToLower(uuid);
  if (tessera::StartsWith(want, "mig-") && device != nullptr) {
    SharedState* s = NvmlState();
    if (s == nullptr) return NVML_ERROR_UNINITIALIZED;
    std::vector<int> present = NvmlPresent();
    SharedState::Lock lock(*s);
    nvmlDevice_t found = FindMigDeviceByUuid(s->file(), present, want);
    if (found == nullptr) return NVML_ERROR_NOT_FOUND;
    *device = found;
    return NVML_SUCCESS;
  }
  return FindDevice(device,
                    [&](int, const DeviceState& d) { return tessera::ToLower(d.uuid) == want; });
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  if (pciBusId == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::string want = CanonicalBusId(pciBusId);
  if (want.empty()) return NVML_ERROR_INVALID_ARGUMENT;
  return FindDevice(device, [&](int, const DeviceState& d) { return want == d.pci_bus_id; });
}

// A MIG device's name is its GPU's with the profile: "NVIDIA H100 80GB HBM3 MIG 1g.10gb".
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  SharedState* s;
  int i;
  if (IsNvmlMigHandle(device)) {
    int gi, ci;
    if (nvmlReturn_t r = NvmlResolveMig(device, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
    SharedState::Lock lock(*s);
    return CopyString(MigDeviceName(s->file().devices[i], gi, ci).c_str(), name, length);
  }
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  return CopyString(s->file().devices[i].model, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  SharedState* s;
  int i;
  if (IsNvmlMigHandle(device)) {
    int gi, ci;
    if (nvmlReturn_t r = NvmlResolveMig(device, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
    SharedState::Lock lock(*s);
    return CopyString(MigDeviceUuid(s->file().devices[i], gi, ci).c_str(), uuid, length);
  }
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  return CopyString(s->file().devices[i].uuid, uuid, length);
}

// The enumeration index (among the present devices), as real NVML numbers them in a container.
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  std::vector<int> present = NvmlPresent();
  auto it = std::find(present.begin(), present.end(), i);
  if (it == present.end()) return NVML_ERROR_INVALID_ARGUMENT;
  *index = static_cast<unsigned>(it - present.begin());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  if (minorNumber == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  *minorNumber = static_cast<unsigned>(i);  // /dev/nvidia<minor>: the physical index
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  const DeviceState& d = s->file().devices[i];
  memset(pci, 0, sizeof(*pci));
  snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", d.pci_bus);
  snprintf(pci->busId, sizeof(pci->busId), "%s", d.pci_bus_id);
  pci->bus = d.pci_bus;
  pci->pciDeviceId = 0x233510DE;  // vendor 0x10DE (NVIDIA) in the low 16 bits
  pci->pciSubSystemId = 0x18B610DE;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  *node = 0;  // one NUMA node simulated
  return NVML_SUCCESS;
}

// From the machine's topology (peer_topology.h): NVLink between the devices of one NVLink group;
// reads and writes wherever the devices are peers (NVLink or PCIe); atomics over NVLink only.
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                    nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t* p2pStatus) {
  if (p2pStatus == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int a, b;
  if (nvmlReturn_t r = NvmlResolve(device1, &s, &a); r != NVML_SUCCESS) return r;
  if (nvmlReturn_t r = NvmlResolve(device2, &s, &b); r != NVML_SUCCESS) return r;
  const StateFile& f = s->file();
  bool ok = false;
  switch (p2pIndex) {
    case NVML_P2P_CAPS_INDEX_READ:
    case NVML_P2P_CAPS_INDEX_WRITE:
    case NVML_P2P_CAPS_INDEX_PROP:
      ok = PeerAccess(f, a, b);
      break;
    case NVML_P2P_CAPS_INDEX_NVLINK:
    case NVML_P2P_CAPS_INDEX_ATOMICS:
      ok = NvlinkPeers(f, a, b);
      break;
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
  *p2pStatus = ok ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

// The same as cuDeviceComputeCapability's (cuda_device.cc): every simulated device is a 9.0.
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  *major = 9;
  *minor = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes) {
  if (attributes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (IsNvmlMigHandle(device)) {
    int gi, ci;
    if (nvmlReturn_t r = NvmlResolveMig(device, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
    SharedState::Lock lock(*s);
    MigDeviceAttributes(s->file().devices[i], gi, ci, attributes);
    return NVML_SUCCESS;
  }
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  const DeviceState& d = s->file().devices[i];
  memset(attributes, 0, sizeof(*attributes));
  attributes->multiprocessorCount = d.sms;
  attributes->sharedCopyEngineCount = 1;
  attributes->gpuInstanceSliceCount = 1;
  attributes->computeInstanceSliceCount = 1;
  attributes->memorySizeMB = d.memory_total >> 20;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (IsNvmlMigHandle(device)) {
    // The GPU instance's memory, shared by its compute instances.
    int gi, ci;
    if (nvmlReturn_t r = NvmlResolveMig(device, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
    SharedState::Lock lock(*s);
    s->Sweep(lock, SharedState::SweepMode::kFull);
    MigDeviceMemory(s->file(), i, gi, memory);
    return NVML_SUCCESS;
  }
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  s->Sweep(lock, SharedState::SweepMode::kFull);
  const DeviceState& d = s->file().devices[i];
  memory->total = d.memory_total;
  memory->used = std::min(d.used_bytes, d.memory_total);
  memory->free = d.memory_total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  nvmlMemory_t m;
  if (nvmlReturn_t r = nvmlDeviceGetMemoryInfo(device, &m); r != NVML_SUCCESS) return r;
  memory->total = m.total;
  memory->reserved = 0;
  memory->used = m.used;
  memory->free = m.free;
  return NVML_SUCCESS;
}

// Not in MIG mode (NvmlResolveOutsideMig), as on a real driver.
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolveOutsideMig(device, &s, &i); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  uint64_t now = NowNs();
  DeviceState& d = s->file().devices[i];
  AdvanceDevice(s->file(), i, now);
  uint64_t busy = BusyInWindow(d, now, 1'000'000'000ull);
  utilization->gpu =
      static_cast<unsigned>(std::min<uint64_t>(100, (busy + 5'000'000) / 10'000'000));
  utilization->memory = 0;  // memory bandwidth is not simulated
  return NVML_SUCCESS;
}

// The unversioned (first-ABI) symbols, which nvml.h's macros would otherwise rename.
#undef nvmlInit
#undef nvmlDeviceGetCount
#undef nvmlDeviceGetHandleByIndex
nvmlReturn_t nvmlInit(void) {
  return NvmlInit();
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return nvmlDeviceGetCount_v2(deviceCount);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

}  // extern "C"
