// MigInstanceInfo and MigStatus: what the node agent knows of a GPU's MIG (Multi-Instance GPU)
// state, as discovery through NVML finds it (node/mig/mig_discovery.h). docs/mig.md has the terms.
//
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::node {

// One MIG device: a compute instance inside its GPU instance, which CUDA sees as one device.
struct MigInstanceInfo {
  std::string uuid;          // "MIG-...", what CUDA_VISIBLE_DEVICES and the limits file name
  std::string profile;       // the GPU instance's profile: "3g.40gb"
  std::string device_name;   // the MIG device's own profile: "3g.40gb", or "1c.3g.40gb"
  int gpu_instance = 0;      // NVML GPU instance id
  int compute_instance = 0;  // NVML compute instance id inside it
  int start = 0;             // placement: first memory slice
  int size = 0;              // placement: memory slices
  uint64_t memory_mib = 0;   // the GPU instance's memory
  int sms = 0;               // the compute instance's SMs
  // The capability device nodes a process needs to use it, GPU instance access then compute
  // instance access: "/dev/nvidia-caps/nvidia-cap12". Empty when the driver's minors table
  // (/proc/driver/nvidia-caps/mig-minors) was not readable or lacks them.
  std::vector<std::string> caps_paths;
  // NVML answers for it. Where it is published (inventory, metrics) an unhealthy parent GPU
  // makes it unhealthy too.
  bool healthy = true;
  bool operator==(const MigInstanceInfo&) const = default;
};

// How node.mig.* wants a GPU used (node/mig/mig_config.h).
enum class MigMode { kNone, kFixed, kDynamic };
const char* MigModeName(MigMode mode);  // "none", "fixed", "dynamic"

struct MigStatus {
  bool capable = false;           // NVML answers the MIG calls (nvmlDeviceGetMigMode)
  bool enabled = false;           // the current MIG mode
  bool pending = false;           // the pending MIG mode (differs from `enabled` until a GPU reset)
  MigMode mode = MigMode::kNone;  // what the configuration says for this GPU
  std::vector<MigInstanceInfo> instances;  // ascending GPU instance id, then compute instance id
  bool operator==(const MigStatus&) const = default;
};

}  // namespace tessera::node
