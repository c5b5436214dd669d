// The scheduler's side of the protocol between Tessera's parts (docs/annotations.md): the
// annotations' types are the protocol library's (annotations/), named here as the scheduler uses
// them; what is the scheduler's own is how a decision charges the GPUs it names.
//
//   node tessera.io/gpus              inventory, written by the node agent
//   pod  tessera.io/allocation        the scheduler's decision, written in the Binding
//   pod  tessera.io/allocation-failed the node agent's verdict that the decision cannot be used;
//                                     any non-empty value frees the pod's GPUs in the scheduler
//
// Plain values and pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "annotations/allocation.h"
#include "annotations/inventory.h"
#include "annotations/names.h"

namespace tessera::scheduler {

inline constexpr const char* kInventoryAnnotation = annotations::kGpus;
inline constexpr const char* kAllocationAnnotation = annotations::kAllocation;
inline constexpr const char* kAllocationFailedAnnotation = annotations::kAllocationFailed;

// A GPU of a node, as its inventory says.
using GpuInfo = annotations::InventoryGpu;
using annotations::Allocation;
using annotations::AllocationToJson;
using annotations::ComputeMode;
using annotations::ContainerAllocation;
using annotations::DeviceAllocation;
using annotations::Inventory;
using annotations::InventoryToJson;
using annotations::ParseAllocation;
using annotations::ParseInventory;

// What a pod holds on one GPU: the peak of its init containers (which run one at a time) against
// the sum of its app containers (which run together), per quantity, as Kubernetes counts
// resources. Exclusive when any container uses the GPU exclusively.
struct GpuCharge {
  std::string uuid;
  uint64_t memory_mib = 0;
  int cores = 0;
  bool exclusive = false;
  int slots = 0;
  bool operator==(const GpuCharge&) const = default;
};

// One entry per GPU the allocation names, in order of first appearance.
std::vector<GpuCharge> ChargesOf(const Allocation& allocation);

}  // namespace tessera::scheduler
