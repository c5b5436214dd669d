// The pod's `tessera.io/allocation` annotation: the scheduler's decision, which GPUs each of its
// containers gets with what memory and compute, written in the Binding and read by the node agent
// (as each container's grant), the scheduler (as the pod's charge) and inspect.
// docs/annotations.md has the fields and the rules below.
//
//   Allocation a{.node = "gpu-1", .containers = {{.name = "main", .devices = {
//                    {.uuid = "GPU-a", .memory_mib = 4096, .cores = 30}}}}};
//   Result<Allocation> back = ParseAllocation(AllocationToJson(a));  // == a
//
// Plain values and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera::annotations {

enum class ComputeMode { kHard, kElastic };
const char* ComputeModeName(ComputeMode mode);  // "hard" / "elastic"
// "hard" or "elastic"; nullopt for anything else.
std::optional<ComputeMode> ParseComputeMode(std::string_view text);

struct DeviceAllocation {
  std::string uuid;
  uint64_t memory_mib = 0;
  int cores = 0;           // percent, 0 = no compute limit
  int cores_limit = 0;     // elastic burst cap, 0 = none (field "coresLimit", omitted when 0)
  bool exclusive = false;  // field "exclusive", omitted when false
  bool operator==(const DeviceAllocation&) const = default;
};

struct ContainerAllocation {
  std::string name;
  bool init = false;  // field "init", omitted when false
  ComputeMode mode = ComputeMode::kHard;
  std::vector<DeviceAllocation> devices;
  bool slot = false;  // takes a vGPU slot on each of its GPUs (field "slot", omitted when false)
  // Its size was changed by a resize (resize.h; field "resized", omitted when false): quotas count
  // its devices' memory and cores instead of what its pod spec asks.
  bool resized = false;
  bool operator==(const ContainerAllocation&) const = default;
};

struct Allocation {
  std::string node;
  std::vector<ContainerAllocation> containers;
  bool operator==(const Allocation&) const = default;

  // The decision for container `name`, or nullptr when it lists none (a container without GPUs).
  const ContainerAllocation* Find(std::string_view name) const;
};

std::string AllocationToJson(const Allocation& allocation);
// Errors name the field and where it is (`containers[i] devices[j]`): version other than 1; no
// node; a container without a name, named twice, or without devices; a mode other than hard or
// elastic; a device without uuid, memoryMiB or cores, or named twice in one container; cores
// outside 0..100; coresLimit outside cores..100 (in hard mode it is read and means nothing).
Result<Allocation> ParseAllocation(std::string_view text);

}  // namespace tessera::annotations
