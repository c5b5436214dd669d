// NvmlGpuSource: GPU discovery through NVML: per GPU uuid, index, model, memory, SM count
// (nvmlDeviceGetAttributes_v2), PCI bus id, NUMA node and device node (/dev/nvidia<minor>).
//
// Thread-safe (NVML is); the library must outlive the source.
#pragma once

#include "node/gpu/gpu.h"
#include "node/gpu/nvml_library.h"

namespace tessera::node {

class NvmlGpuSource : public GpuSource {
 public:
  explicit NvmlGpuSource(const NvmlLibrary& nvml) : nvml_(nvml) {}
  Result<std::vector<GpuInfo>> Discover() override;

 private:
  const NvmlLibrary& nvml_;
};

}  // namespace tessera::node
