// NvmlProcessMemory: the device memory each host process holds on each GPU, as the driver reports
// it (nvmlDeviceGetComputeRunningProcesses: contexts, allocations, whatever the process reached
// the driver by, with or without libtessera-cuda.so). The memory guard compares it with each
// container's limit.
//
// Thread-safe (NVML is); the library must outlive the call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "node/gpu/gpu.h"
#include "node/gpu/nvml_library.h"

namespace tessera::node {

// Per GPU UUID: bytes per host PID. A GPU whose driver does not answer is left out; a process
// whose figure the driver does not give (NVML_VALUE_NOT_AVAILABLE) is left out of its GPU.
using ProcessMemory = std::map<std::string, std::map<uint32_t, uint64_t>>;

ProcessMemory NvmlProcessMemory(const NvmlLibrary& nvml, const std::vector<GpuInfo>& gpus);

}  // namespace tessera::node
