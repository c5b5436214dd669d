// The node's `tessera.io/gpus` annotation: the inventory of its GPUs that the node agent writes
// and the scheduler reads (docs/annotations.md has the fields and what each is for).
//
//   Inventory inv{.serving = true, .gpus = {{.uuid = "GPU-a", .model = "NVIDIA H200",
//                                            .memory_mib = 143771}}};
//   Result<Inventory> back = ParseInventory(InventoryToJson(inv));  // == inv
//
// Plain values and pure functions; thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera::annotations {

// The bounds of node.device-memory-scaling, which the inventory's "memoryScaling" repeats.
inline constexpr double kMinMemoryScaling = 1;
inline constexpr double kMaxMemoryScaling = 10;

// A GPU's virtual memory: its physical memory times its memory scaling, in whole MiB (rounded
// down). Exactly `physical_mib` at scaling 1. Inline: the scheduler's fit calls it per GPU.
inline uint64_t VirtualMemoryMiB(uint64_t physical_mib, double memory_scaling) {
  if (memory_scaling == 1) return physical_mib;
  const double mib = std::floor(static_cast<double>(physical_mib) * memory_scaling);
  // A forged inventory's memory must not overflow the conversion.
  if (!(mib < 18446744073709551616.0)) return std::numeric_limits<uint64_t>::max();
  return mib > 0 ? static_cast<uint64_t>(mib) : 0;
}

// A memory scaling as people write it, the shortest decimal that reads back the same: "2", "1.5".
std::string MemoryScalingText(double memory_scaling);

// One MIG device of a GPU in MIG mode (a compute instance in its GPU instance; docs/mig.md).
struct InventoryMigInstance {
  std::string uuid;     // "MIG-...", unique on the node
  std::string profile;  // the GPU instance's profile: "3g.40gb"
  std::string device;   // the MIG device's profile when it is a part of the GPU instance:
                        // "1c.3g.40gb"; "" when it is the whole GPU instance
  int start = 0;        // placement: first memory slice, 0-7
  int size = 0;         // placement: memory slices, 1-8
  uint64_t memory_mib = 0;
  int sms = 0;
  bool healthy = true;
  bool operator==(const InventoryMigInstance&) const = default;
};

// A MIG-capable GPU's MIG state, and how the agent's configuration uses it (node.mig.*).
struct InventoryMig {
  std::string mode = "none";                    // none | fixed | dynamic
  bool enabled = false;                         // MIG mode now
  bool pending = false;                         // MIG mode after the next GPU reset
  std::vector<InventoryMigInstance> instances;  // ascending GPU instance id
  bool operator==(const InventoryMig&) const = default;
};

struct InventoryGpu {
  std::string uuid;  // unique on the node, never empty
  int index = 0;
  std::string model;
  uint64_t memory_mib = 0;
  int sms = 0;
  int numa = -1;  // -1 = unknown
  bool healthy = true;
  // vGPU slots (node.device-split-count): how many containers of the slot-counted resource
  // (nvidia.com/gpu) kubelet admits on this GPU; 0 = not counted (an agent that does not say).
  int slots = 0;
  std::string pci_bus_id;    // "" = not said
  double cores_scaling = 1;  // node.device-cores-scaling, as the agent applies it
  // node.device-memory-scaling: pods are placed against memory_mib x memory_scaling (virtual
  // memory); memory_mib stays the physical memory. 1 when absent (agents before the field).
  double memory_scaling = 1;
  // Absent on a GPU without MIG, on a MIG-capable GPU that is not in MIG mode and that the
  // configuration leaves alone (mode none), and from agents before the field.
  std::optional<InventoryMig> mig;
  bool operator==(const InventoryGpu&) const = default;

  uint64_t virtual_memory_mib() const { return VirtualMemoryMiB(memory_mib, memory_scaling); }
  bool in_mig_mode() const { return mig && mig->enabled; }
  // Pods may be placed on the GPU with Tessera's limits: healthy, and not in MIG mode, where the
  // GPU is no CUDA device itself, only its MIG devices are (docs/mig.md).
  bool shareable() const { return healthy && !in_mig_mode(); }
};

struct Inventory {
  // Every device plugin of the node is registered with kubelet; while false, kubelet would fail
  // a pod that needs the node's devices. True when absent (agents before the field).
  bool serving = true;
  std::vector<InventoryGpu> gpus;
  bool operator==(const Inventory&) const = default;
};

std::string InventoryToJson(const Inventory& inventory);
// Errors name the field and the GPU (`gpus[i]`): a missing or ill-typed required field, an empty
// or repeated uuid, negative slots, a cores scaling that is not positive, a memory scaling below
// kMinMemoryScaling or above kMaxMemoryScaling; in "mig": a mode other than none, fixed or
// dynamic, an instance without uuid or profile, a uuid repeated on the node, a placement outside
// the GPU's 8 memory slices.
Result<Inventory> ParseInventory(std::string_view text);

}  // namespace tessera::annotations
