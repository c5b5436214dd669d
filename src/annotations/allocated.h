// The pod's `tessera.io/allocated` annotation: what the node agent set up for each container of
// the pod at PreStartContainer (node-side truth): the allocation ID of its files and the GPUs it
// got. The node agent writes it and reads it back (the base of its next record; which containers
// still wait for devices). Keyed by container name, so without a "version" field; readers ignore
// the fields of a record they do not know.
//
//   {"main": {"allocation": "a1b2", "devices": ["GPU-a"]}, "warmup": {...}}
//
//   Allocated a{{"main", {.allocation = "a1b2", .devices = {"GPU-a"}}}};
//   Result<Allocated> back = ParseAllocated(AllocatedToJson(a));  // == a
//
// Plain values and pure functions; thread-safe. Why: docs/annotations.md.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera::annotations {

struct AllocatedContainer {
  std::string allocation;            // the allocation ID (its folder on the node)
  std::vector<std::string> devices;  // GPU UUIDs
  bool operator==(const AllocatedContainer&) const = default;
};

// By container name.
using Allocated = std::map<std::string, AllocatedContainer>;

std::string AllocatedToJson(const Allocated& allocated);
// Errors name the container and the field: not an object, a record without "allocation" or with
// "devices" that is not a list of strings.
Result<Allocated> ParseAllocated(std::string_view text);

}  // namespace tessera::annotations
