// NVML's MIG handles: a GPU instance (nvmlGpuInstance_t), a compute instance
// (nvmlComputeInstance_t) and a MIG device (an nvmlDevice_t that names a compute instance). Each is
// a fixed object per (GPU, GPU instance id[, compute instance id]), so a handle stays the same for
// the same ids and is reused, as NVML's are, once the instance is destroyed and made again. A
// handle is valid while its instance exists (mig_state.h); calls on a destroyed one return
// NVML_ERROR_INVALID_ARGUMENT.
//
// Thread-safety: the handles are constant; the lookups take the state's lock themselves.
#pragma once

#include <string>
#include <vector>

#include "abi/nvml.h"
#include "shared_state.h"

namespace simgpu {

// Whether `device` is a MIG device handle (live or not).
bool IsNvmlMigHandle(nvmlDevice_t device);

// The MIG device a handle names, when it exists now: NVML_ERROR_UNINITIALIZED,
// NVML_ERROR_INVALID_ARGUMENT (not a MIG handle, or its compute instance is gone),
// NVML_ERROR_GPU_IS_LOST, or NVML_SUCCESS with the ids set.
nvmlReturn_t NvmlResolveMig(nvmlDevice_t device, SharedState** state, int* index, int* gi, int* ci);

// NvmlResolve for the queries a real driver does not answer in MIG mode, device and process
// utilisation (NVML's reference: "On MIG-enabled GPUs, querying device utilization rates is not
// currently supported", and the same of process utilization): NVML_ERROR_NOT_SUPPORTED for a GPU
// whose MIG mode is on and for a MIG device handle (after NvmlResolveMig's checks), else
// NvmlResolve's answer.
nvmlReturn_t NvmlResolveOutsideMig(nvmlDevice_t device, SharedState** state, int* index);

// The device a handle names, a GPU's or a MIG device's: as NvmlResolve or NvmlResolveMig, with
// *mig set to the MIG device's ProcessSlot::mig_instance value (0 for a GPU handle).
nvmlReturn_t NvmlResolveAny(nvmlDevice_t device, SharedState** state, int* index, uint32_t* mig);

// A MIG device's memory and attributes (the MIG-aware parts of nvml_device.cc's queries); the
// state's lock held, the device resolved.
void MigDeviceMemory(const StateFile& file, int dev, int gi, nvmlMemory_t* memory);
void MigDeviceAttributes(const DeviceState& dev, int gi, int ci, nvmlDeviceAttributes_t* out);

// The MIG device whose UUID is `uuid` (case ignored) on the GPUs `present`, or nullptr.
nvmlDevice_t FindMigDeviceByUuid(const StateFile& file, const std::vector<int>& present,
                                 const std::string& uuid);

}  // namespace simgpu
