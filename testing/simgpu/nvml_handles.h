// NVML's per-process state: the init count and one device handle per physical device. NVML sees
// the present devices (those whose device node the process has, visible_devices.h) in their
// physical order (CUDA_VISIBLE_DEVICES is ignored, as by real NVML). A removed device (`simgpu
// remove`) keeps its index and count; its handle cannot be obtained and every query on an old
// handle returns NVML_ERROR_GPU_IS_LOST.
//
// Thread-safety: all functions are safe from any thread (the init count is guarded by a mutex;
// the handles are constant).
#pragma once

#include <vector>

#include "abi/nvml.h"
#include "shared_state.h"

namespace simgpu {

struct NvmlDevice {
  int index;
};

// The attached state, or nullptr when NVML is not initialised.
SharedState* NvmlState();

// The device a handle names: NVML_ERROR_UNINITIALIZED, NVML_ERROR_INVALID_ARGUMENT (bad handle),
// NVML_ERROR_GPU_IS_LOST (removed) or NVML_SUCCESS with *state and *index set.
nvmlReturn_t NvmlResolve(nvmlDevice_t device, SharedState** state, int* index);

// The handle of physical device `index` (no checks).
nvmlDevice_t NvmlHandle(int index);

// The physical indexes of the devices NVML shows, in order (empty when not initialised).
std::vector<int> NvmlPresent();

// Copies `value` with its terminating NUL into `out` of `length` bytes, as NVML's string queries
// do: NVML_ERROR_INSUFFICIENT_SIZE when it does not fit.
nvmlReturn_t CopyString(const char* value, char* out, unsigned length);

nvmlReturn_t NvmlInit();
nvmlReturn_t NvmlShutdown();

}  // namespace simgpu
