// Which devices a process sees. First the device nodes: the real driver only shows a process the
// GPUs whose /dev/nvidia<N> it can open, so a container given some GPUs' nodes (by CDI or the
// device plugin) sees those alone. simgpu has no kernel module: with SIMGPU_DEV_ROOT set, device
// N is present when <root>/dev/nvidia<N> exists (a container: "/"; the node agent on a host whose
// nodes live under a driver root: that root); unset, every device is present.
// Then CUDA_VISIBLE_DEVICES as the driver API reads it: a comma-separated list of ordinals among
// the present devices or UUIDs (a unique UUID prefix, "GPU-" optional, is enough), in the order
// given. Enumeration stops at the first entry that names no device or repeats one; unset means
// every present device; empty means none. Thread-compatible (pure functions).
#pragma once

#include <vector>

#include "state_layout.h"

namespace simgpu {

// The physical indexes of the present devices, in order (`dev_root` is SIMGPU_DEV_ROOT's value).
std::vector<int> PresentDevices(const char* dev_root, const StateFile& state);

// The physical device index of each ordinal the program will see.
std::vector<int> VisibleDevices(const char* cuda_visible_devices, const StateFile& state,
                                const std::vector<int>& present);

}  // namespace simgpu
