// NvmlGpuSource: GPU discovery through NVML: per GPU uuid, index, model, memory, SM count
// (nvmlDeviceGetAttributes_v2), PCI bus id, NUMA node and device node (/dev/nvidia<minor>); the
// PCIe root complex from sysfs under `sysfs_root` (node.sysfs-root); the MIG state of each GPU
// (node/mig/mig_discovery.h, the capability minors from `mig.minors_file`) with the mode `mig`
// gives it.
//
// Thread-safe (NVML is); the library must outlive the source.
#pragma once

#include <string>
#include <utility>

#include "node/gpu/gpu.h"
#include "node/gpu/nvml_library.h"
#include "node/mig/mig_config.h"

namespace tessera::node {

class NvmlGpuSource : public GpuSource {
 public:
  explicit NvmlGpuSource(const NvmlLibrary& nvml, std::string sysfs_root = "/sys",
                         MigConfig mig = {})
      : nvml_(nvml), sysfs_root_(std::move(sysfs_root)), mig_(std::move(mig)) {}
  Result<std::vector<GpuInfo>> Discover() override;

 private:
  const NvmlLibrary& nvml_;
  const std::string sysfs_root_;
  const MigConfig mig_;
};

}  // namespace tessera::node
