// Grant: what one container gets on this node (GPUs, memory and compute per GPU, mode), and the
// parsing of the scheduler's `tessera.io/allocation` pod annotation into grants.
//
// Plain values and pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "annotations/names.h"
#include "common/status.h"

namespace tessera::node {

inline constexpr const char* kAllocationAnnotation = annotations::kAllocation;
inline constexpr const char* kAllocatedAnnotation = annotations::kAllocated;
inline constexpr const char* kAllocationFailedAnnotation = annotations::kAllocationFailed;
inline constexpr const char* kGpusAnnotation = annotations::kGpus;

struct GrantDevice {
  std::string uuid;
  uint64_t memory_mib = 0;  // 0 = no limit
  int cores = 0;            // percent; 0 or 100 = no limit
  int cores_limit = 0;      // elastic: the most it may use when alone ("coresLimit"); 0 = all
};

struct Grant {
  std::string mode = "hard";  // hard | elastic
  std::vector<GrantDevice> devices;
  bool operator==(const Grant&) const = default;
};
inline bool operator==(const GrantDevice& a, const GrantDevice& b) {
  return a.uuid == b.uuid && a.memory_mib == b.memory_mib && a.cores == b.cores &&
         a.cores_limit == b.cores_limit;
}

// The decision for `container` in a pod's `tessera.io/allocation` annotation value, read by the
// protocol's parser (annotations/allocation.h: what is malformed is decided there once). Returns
// nullopt when the annotation lists no such container, an error naming what is malformed. The
// decision's node must be `node`.
Result<std::optional<Grant>> GrantFromAllocation(const std::string& annotation,
                                                 const std::string& container,
                                                 const std::string& node);

}  // namespace tessera::node
