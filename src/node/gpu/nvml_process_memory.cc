#include "node/gpu/nvml_process_memory.h"

namespace tessera::node {

ProcessMemory NvmlProcessMemory(const NvmlLibrary& nvml, const std::vector<GpuInfo>& gpus) {
  ProcessMemory out;
  if (nvml.DeviceGetComputeRunningProcesses == nullptr || nvml.DeviceGetHandleByUUID == nullptr) {
    return out;
  }
  for (const GpuInfo& g : gpus) {
    nvmlDevice_t dev = nullptr;
    if (nvml.DeviceGetHandleByUUID(g.uuid.c_str(), &dev) != NVML_SUCCESS) continue;
    // Processes may start between the two calls: ask with room to spare, grow while too small.
    std::vector<nvmlProcessInfo_t> infos(64);
    unsigned int count = static_cast<unsigned int>(infos.size());
    nvmlReturn_t r = nvml.DeviceGetComputeRunningProcesses(dev, &count, infos.data());
    for (int attempt = 0; r == NVML_ERROR_INSUFFICIENT_SIZE && attempt < 3; ++attempt) {
      infos.resize(count + 64);
      count = static_cast<unsigned int>(infos.size());
      r = nvml.DeviceGetComputeRunningProcesses(dev, &count, infos.data());
    }
    if (r != NVML_SUCCESS) continue;
    std::map<uint32_t, uint64_t>& used = out[g.uuid];
    for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
      if (infos[i].usedGpuMemory == static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE))
        continue;
      used[infos[i].pid] += infos[i].usedGpuMemory;
    }
  }
  return out;
}

}  // namespace tessera::node
