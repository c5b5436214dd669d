// CUDA_VISIBLE_DEVICES as the driver API reads it: a comma-separated list of device indexes or
// UUIDs (a unique UUID prefix, "GPU-" optional, is enough), in the order given. Enumeration stops
// at the first entry that names no device or repeats one; unset means every device; empty means
// none. Thread-compatible (pure function).
#pragma once

#include <vector>

#include "state_layout.h"

namespace simgpu {

// The physical device index of each ordinal the program will see.
std::vector<int> VisibleDevices(const char* cuda_visible_devices, const StateFile& state);

}  // namespace simgpu
