// NvmlGpuSource: GPU discovery through NVML: per GPU uuid, index, model, memory, SM count
// (nvmlDeviceGetAttributes_v2), PCI bus id, NUMA node and device node (/dev/nvidia<minor>); the
// PCIe root complex from sysfs under `sysfs_root` (node.sysfs-root).
//
// Thread-safe (NVML is); the library must outlive the source.
#pragma once

#include <string>
#include <utility>

#include "node/gpu/gpu.h"
#include "node/gpu/nvml_library.h"

namespace tessera::node {

class NvmlGpuSource : public GpuSource {
 public:
  explicit NvmlGpuSource(const NvmlLibrary& nvml, std::string sysfs_root = "/sys")
      : nvml_(nvml), sysfs_root_(std::move(sysfs_root)) {}
  Result<std::vector<GpuInfo>> Discover() override;

 private:
  const NvmlLibrary& nvml_;
  const std::string sysfs_root_;
};

}  // namespace tessera::node
