// NvmlLibrary: libnvidia-ml.so.1 loaded at run time (dlopen), with the calls the node agent uses
// resolved once. The driver is not linked: a node without it gets a clear error instead of a
// loader failure, and tests point the agent at simgpu's library.
//
// Open() initialises NVML; the destructor shuts it down. NVML itself is thread-safe, so the
// function pointers may be called from any thread once Open() has returned.
#pragma once

#include <memory>
#include <string>

#include "abi/nvml.h"
#include "common/status.h"

namespace tessera::node {

class NvmlLibrary {
 public:
  // Loads `path` ("libnvidia-ml.so.1" searches the loader path) and calls nvmlInit_v2. Errors
  // name the library and what failed.
  static Result<std::unique_ptr<NvmlLibrary>> Open(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // "NVML <call>: <nvmlErrorString>" as a Status (OK for NVML_SUCCESS).
  Status Check(nvmlReturn_t r, const char* call) const;

  decltype(&nvmlDeviceGetCount_v2) DeviceGetCount = nullptr;
  decltype(&nvmlDeviceGetHandleByIndex_v2) DeviceGetHandleByIndex = nullptr;
  decltype(&nvmlDeviceGetHandleByUUID) DeviceGetHandleByUUID = nullptr;
  decltype(&nvmlDeviceGetUUID) DeviceGetUUID = nullptr;
  decltype(&nvmlDeviceGetName) DeviceGetName = nullptr;
  decltype(&nvmlDeviceGetIndex) DeviceGetIndex = nullptr;
  decltype(&nvmlDeviceGetMinorNumber) DeviceGetMinorNumber = nullptr;
  decltype(&nvmlDeviceGetMemoryInfo) DeviceGetMemoryInfo = nullptr;
  decltype(&nvmlDeviceGetPciInfo_v3) DeviceGetPciInfo = nullptr;
  // Optional (nullptr when the driver lacks them): attributes, NUMA node, compute capability,
  // driver version, events, per-process utilisation and memory.
  decltype(&nvmlDeviceGetAttributes_v2) DeviceGetAttributes = nullptr;
  decltype(&nvmlDeviceGetNumaNodeId) DeviceGetNumaNodeId = nullptr;
  decltype(&nvmlDeviceGetCudaComputeCapability) DeviceGetCudaComputeCapability = nullptr;
  decltype(&nvmlSystemGetDriverVersion) SystemGetDriverVersion = nullptr;
  decltype(&nvmlEventSetCreate) EventSetCreate = nullptr;
  decltype(&nvmlDeviceRegisterEvents) DeviceRegisterEvents = nullptr;
  decltype(&nvmlEventSetWait_v2) EventSetWait = nullptr;
  decltype(&nvmlEventSetFree) EventSetFree = nullptr;
  decltype(&nvmlDeviceGetProcessUtilization) DeviceGetProcessUtilization = nullptr;
  decltype(&nvmlDeviceGetComputeRunningProcesses_v3) DeviceGetComputeRunningProcesses = nullptr;
  // Optional: MIG (node/mig/). A driver without them is a driver without MIG.
  decltype(&nvmlDeviceGetMigMode) DeviceGetMigMode = nullptr;
  decltype(&nvmlDeviceSetMigMode) DeviceSetMigMode = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceProfileInfo) DeviceGetGpuInstanceProfileInfo = nullptr;
  decltype(&nvmlDeviceCreateGpuInstanceWithPlacement) DeviceCreateGpuInstanceWithPlacement =
      nullptr;
  decltype(&nvmlDeviceGetGpuInstances) DeviceGetGpuInstances = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceById) DeviceGetGpuInstanceById = nullptr;
  decltype(&nvmlGpuInstanceGetInfo) GpuInstanceGetInfo = nullptr;
  decltype(&nvmlGpuInstanceDestroy) GpuInstanceDestroy = nullptr;
  decltype(&nvmlGpuInstanceGetComputeInstanceProfileInfo) GpuInstanceGetComputeInstanceProfileInfo =
      nullptr;
  decltype(&nvmlGpuInstanceCreateComputeInstance) GpuInstanceCreateComputeInstance = nullptr;
  decltype(&nvmlGpuInstanceGetComputeInstances) GpuInstanceGetComputeInstances = nullptr;
  decltype(&nvmlComputeInstanceDestroy) ComputeInstanceDestroy = nullptr;
  decltype(&nvmlDeviceGetMaxMigDeviceCount) DeviceGetMaxMigDeviceCount = nullptr;
  decltype(&nvmlDeviceGetMigDeviceHandleByIndex) DeviceGetMigDeviceHandleByIndex = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceId) DeviceGetGpuInstanceId = nullptr;
  decltype(&nvmlDeviceGetComputeInstanceId) DeviceGetComputeInstanceId = nullptr;

  // Whether every MIG call above resolved.
  bool HasMig() const;

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  decltype(&nvmlShutdown) shutdown_ = nullptr;
  decltype(&nvmlErrorString) error_string_ = nullptr;
};

}  // namespace tessera::node
