// GpuInfo: what the node agent knows about one physical GPU, and the source that discovers them.
//
// Plain values; thread-compatible. A GpuSource implementation states its own thread-safety rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "annotations/inventory.h"
#include "common/status.h"
#include "node/gpu/mig_info.h"

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
  // node.device-memory-scaling, which the agent sets on every GPU it found: the GPU offers
  // memory_mib x memory_scaling of virtual memory (placement, device plugins, ResourceSlice,
  // limits), the part beyond memory_mib from host memory (the limits file's spill.<i>).
  double memory_scaling = 1;
  // MIG mode and MIG devices; `capable` false on a GPU without MIG.
  MigStatus mig;

  // memory_mib x memory_scaling in whole MiB (annotations::VirtualMemoryMiB).
  uint64_t virtual_memory_mib() const {
    return annotations::VirtualMemoryMiB(memory_mib, memory_scaling);
  }
};

// Finds the node's GPUs (NVML on a real node, a list in tests).
class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // The GPUs in index order; an error when the driver cannot be asked.
  virtual Result<std::vector<GpuInfo>> Discover() = 0;
};

// The GPU's memory for messages: "81920 MiB", or with its memory scaled "163840 MiB (81920 MiB
// x 2)".
inline std::string MemoryText(const GpuInfo& gpu) {
  std::string text = std::to_string(gpu.virtual_memory_mib()) + " MiB";
  if (gpu.memory_scaling == 1) return text;
  return text + " (" + std::to_string(gpu.memory_mib) + " MiB x " +
         annotations::MemoryScalingText(gpu.memory_scaling) + ")";
}

// The GPU with `uuid`, or nullptr.
const GpuInfo* FindGpu(const std::vector<GpuInfo>& gpus, const std::string& uuid);

// The MIG device with `uuid` ("MIG-...") and its GPU, or {nullptr, nullptr}.
struct MigDeviceRef {
  const GpuInfo* gpu = nullptr;
  const MigInstanceInfo* instance = nullptr;
};
MigDeviceRef FindMigDevice(const std::vector<GpuInfo>& gpus, const std::string& uuid);

}  // namespace tessera::node
