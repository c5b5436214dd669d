// GpuInfo: what the node agent knows about one physical GPU, and the source that discovers them.
//
// Plain values; thread-compatible. A GpuSource implementation states its own thread-safety rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace tessera::node {

struct GpuInfo {
  std::string uuid;                // "GPU-8f3c..."
  int index = 0;                   // NVML index on the host
  std::string model;               // "NVIDIA H200"
  uint64_t memory_mib = 0;         // total memory
  int sms = 0;                     // streaming multiprocessors
  std::string pci_bus_id;          // "00000000:17:00.0"
  std::string pcie_root;           // "pci0000:00" (pci_address.h), empty when unknown
  int numa = -1;                   // NUMA node, -1 when unknown
  std::string compute_capability;  // "9.0", empty when unknown
  std::string driver_version;      // the node's driver, as NVML says it ("580.65.06"); may be empty
  std::string device_path;         // "/dev/nvidia0"
  bool healthy = true;
};

// Finds the node's GPUs (NVML on a real node, a list in tests).
class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // The GPUs in index order; an error when the driver cannot be asked.
  virtual Result<std::vector<GpuInfo>> Discover() = 0;
};

// The GPU with `uuid`, or nullptr.
const GpuInfo* FindGpu(const std::vector<GpuInfo>& gpus, const std::string& uuid);

}  // namespace tessera::node
