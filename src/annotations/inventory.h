// The node's `tessera.io/gpus` annotation: the inventory of its GPUs that the node agent writes
// and the scheduler reads (docs/annotations.md has the fields and what each is for).
//
//   Inventory inv{.serving = true, .gpus = {{.uuid = "GPU-a", .model = "NVIDIA H200",
//                                            .memory_mib = 143771}}};
//   Result<Inventory> back = ParseInventory(InventoryToJson(inv));  // == inv
//
// Plain values and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera::annotations {

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
  bool operator==(const InventoryGpu&) const = default;
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
// or repeated uuid, negative slots, a cores scaling that is not positive.
Result<Inventory> ParseInventory(std::string_view text);

}  // namespace tessera::annotations
