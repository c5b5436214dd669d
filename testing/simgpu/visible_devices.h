// Which devices a process sees. First the device nodes: the real driver only shows a process the
// GPUs whose /dev/nvidia<N> it can open, so a container given some GPUs' nodes (by CDI or the
// device plugin) sees those alone. simgpu has no kernel module: with SIMGPU_DEV_ROOT set, device
// N is present when <root>/dev/nvidia<N> exists (a container: "/"; the node agent on a host whose
// nodes live under a driver root: that root); unset, every device is present.
// Then CUDA_VISIBLE_DEVICES as the driver API reads it: a comma-separated list of ordinals among
// the present devices or UUIDs (a unique UUID prefix, "GPU-" optional, is enough), in the order
// given. Enumeration stops at the first entry that names no device or repeats one; unset means
// every present device; empty means none.
// MIG (mig_state.h), as the driver does: a GPU in MIG mode is not a CUDA device itself, its MIG
// devices are, and a process enumerates one MIG device at most. Entries `MIG-<uuid>` (a unique
// prefix is enough) or `MIG-GPU-<uuid>/<gi>/<ci>` name a MIG device; the first one named is used
// and later ones are skipped; an ordinal or UUID of a GPU in MIG mode is skipped. Unset, each GPU
// in MIG mode gives its first MIG device (lowest GPU, then compute instance id) while no other
// MIG device is in the list. With SIMGPU_DEV_ROOT set (`dev_root`), a MIG device is there only
// when its GPU instance's and compute instance's capability nodes exist,
// <root>/dev/nvidia-caps/nvidia-cap<minor> (MigCapMinor), as the driver lets a process use a MIG
// device only when it can open them. Thread-compatible (pure functions); the caller holds the
// state's lock, since MIG devices change.
#pragma once

#include <vector>

#include "state_layout.h"

namespace simgpu {

// The physical indexes of the present devices, in order (`dev_root` is SIMGPU_DEV_ROOT's value).
std::vector<int> PresentDevices(const char* dev_root, const StateFile& state);

// A device CUDA enumerates: physical device `device`, or its MIG device (gi, ci) when gi >= 0.
struct CudaDevice {
  int device = 0;
  int gi = -1;
  int ci = -1;
  bool operator==(const CudaDevice&) const = default;
};

// The device of each ordinal the program will see.
std::vector<CudaDevice> VisibleDevices(const char* cuda_visible_devices, const StateFile& state,
                                       const std::vector<int>& present,
                                       const char* dev_root = nullptr);

}  // namespace simgpu
