// The scheduler's side of the protocol between Tessera's parts (docs/annotations.md): the
// annotations' types and how a decision charges the GPUs it names are the protocol library's
// (annotations/), named here as the scheduler uses them.
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
#include "annotations/charges.h"
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

// What a pod holds on each GPU its decision names (annotations/charges.h).
using annotations::ChargesOf;
using annotations::GpuCharge;

}  // namespace tessera::scheduler
