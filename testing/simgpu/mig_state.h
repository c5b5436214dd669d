// MIG on the simulated GPUs: the mode of each GPU, its GPU instances and their compute instances,
// kept in the state file (DeviceState::mig_mode, gpu_instances) so that every process sees them,
// and checked against the GPU's MIG table and placement rules from src/mig (profiles.h, layout.h).
// NVML (nvml_mig.cc) and the CLI (`simgpu reset-gpu`) change them; docs/simgpu.md, "MIG", says
// what is modelled.
//
// A GPU instance's id is fixed by its placement, as the driver numbers them: 0 for all eight
// memory slices, 1 + start/4 for a half, 3 + start/2 for a quarter, 7 + start for an eighth.
// Compute instance ids are the lowest free id in their GPU instance; a compute instance takes the
// first free run of compute slices of its size.
//
// Thread-safety: every function needs the state's Lock held by the caller (the `lock` argument);
// they read and write the shared file only. On error nothing is changed.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "mig/profiles.h"
#include "shared_state.h"

namespace simgpu {

// The MIG table of device `dev`'s model, or nullptr when the model has none (no MIG).
const tessera::mig::GpuModel* MigModel(const DeviceState& dev);

// The id of a GPU instance of `size` memory slices at `start` (above).
int GpuInstanceIdFor(int start, int size);

// The GPU instance profile of a live GPU instance.
const tessera::mig::GpuInstanceProfile& GiProfile(const DeviceState& dev, const MigGpuInstance& gi);

// Whether a live process has a context or device memory on device `dev` (after a full sweep).
bool DeviceInUse(SharedState& state, const SharedState::Lock& lock, int dev);

// What nvmlDeviceSetMigMode did: the mode is in effect now (the idle GPU was reset at once), or
// pending until `simgpu reset-gpu` because processes use the GPU or, to disable MIG, GPU
// instances exist (InUse).
enum class MigActivation { kApplied, kInUse };

// Sets the mode (0 or 1) of device `dev`. FailedPrecondition when the model has no MIG,
// InvalidArgument for another mode.
tessera::Result<MigActivation> SetMigMode(SharedState& state, const SharedState::Lock& lock,
                                          int dev, uint32_t mode);

// A GPU reset (`simgpu reset-gpu`): applies the pending MIG mode and destroys every GPU and
// compute instance, as a reset does. FailedPrecondition (saying which PIDs) while processes use
// the GPU.
tessera::Status ResetGpu(SharedState& state, const SharedState::Lock& lock, int dev);

// Creates a GPU instance of the model's profile with NVML index `nvml_profile` at `start`, or,
// with start < 0, where src/mig's placement policy puts it; returns its id. FailedPrecondition
// when MIG is not enabled, NotFound for a profile the model lacks, InvalidArgument for a start
// that is not one of the profile's placements, ResourceExhausted when it does not fit now.
tessera::Result<int> CreateGpuInstance(StateFile& file, const SharedState::Lock& lock, int dev,
                                       int nvml_profile, int start);

// Destroys GPU instance `gi`: NotFound when it does not exist, FailedPrecondition (in use) while
// it has compute instances.
tessera::Status DestroyGpuInstance(StateFile& file, const SharedState::Lock& lock, int dev, int gi);

// Creates a compute instance of `slices` compute slices in GPU instance `gi`, its timeline started
// afresh (ResetTimeline); returns its id.
// NotFound when the GPU instance does not exist or has no such compute profile,
// ResourceExhausted when the profile's count or the free compute slices do not allow it.
tessera::Result<int> CreateComputeInstance(StateFile& file, const SharedState::Lock& lock, int dev,
                                           int gi, int ci_profile);

// Destroys compute instance `ci` of GPU instance `gi`: NotFound when it does not exist,
// FailedPrecondition (in use) while a process has a context or memory on it.
tessera::Status DestroyComputeInstance(StateFile& file, const SharedState::Lock& lock, int dev,
                                       int gi, int ci);

// The compute instance profile of a live compute instance, from the GPU instance's profile.
const tessera::mig::ComputeInstanceProfile& CiProfile(const tessera::mig::GpuInstanceProfile& gi,
                                                      const MigComputeInstance& ci);

// A MIG device's name, as NVML and CUDA give it: "NVIDIA H100 80GB HBM3 MIG 1g.10gb" (a compute
// instance of part of its GPU instance: "... MIG 1c.3g.40gb"), and its SMs. The device must exist.
std::string MigDeviceName(const DeviceState& dev, int gi, int ci);
int MigDeviceSms(const DeviceState& dev, int gi, int ci);

// The minor number of a MIG capability device node, /dev/nvidia-caps/nvidia-cap<minor>, as
// /proc/driver/nvidia-caps/mig-minors lists them: "config" 1, "monitor" 2, then for each GPU (by
// its minor number), each GPU instance id 0-14: "gpu<m>/gi<g>/access", followed by its compute
// instances 0-7 "gpu<m>/gi<g>/ci<c>/access". `ci` < 0: the GPU instance's access node.
int MigCapMinor(int gpu_minor, int gi, int ci);

// The mig-minors table of a machine of `gpus` GPUs, one "<name> <minor>" line each.
std::string MigMinorsTable(int gpus);

// ProcessSlot::mig_instance's value for a MIG device (also the index of its timeline,
// timeline.h), and back.
inline uint32_t MigSlotValue(int gi, int ci) {
  return 1 + static_cast<uint32_t>(gi * kMaxComputeInstances + ci);
}
inline int MigSlotGi(uint32_t value) {
  return static_cast<int>(value - 1) / kMaxComputeInstances;
}
inline int MigSlotCi(uint32_t value) {
  return static_cast<int>(value - 1) % kMaxComputeInstances;
}

// The device memory in use in GPU instance `gi` of device `dev`: the memory of the live process
// slots whose MIG device there is one of its compute instances.
uint64_t GpuInstanceUsed(const StateFile& file, int dev, int gi);

// Whether MIG device (gi, ci) of `dev` exists (MIG on, both instances live).
bool MigDeviceLive(const DeviceState& dev, int gi, int ci);

// The memory of GPU instance `gi` of device `dev` (its profile's), in bytes.
uint64_t GpuInstanceTotal(const DeviceState& dev, int gi);

// "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": a MIG device's UUID, derived from its GPU's UUID
// and its GPU and compute instance ids (the same for the same instance ids on the same GPU).
std::string MigDeviceUuid(const DeviceState& dev, int gi, int ci);

}  // namespace simgpu
