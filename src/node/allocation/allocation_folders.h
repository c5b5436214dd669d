// What the node agent's readers (the metrics exporter, the memory guard) take from the
// allocation folders under <state_dir>/allocations: each folder's owner (owner.json: a pod's
// container, or a DRA claim), its devices' limits (the limits file) and its container's host PIDs
// (the pids file; a claim's folder has none).
//
// Pure function over files; thread-safe. Values may be from different moments (each file is
// replaced atomically, not all of them together).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::node {

struct FolderDevice {
  std::string uuid;
  uint64_t memory_bytes = 0;  // 0 = no limit
  int cores = 0;              // percent; 0 or 100 = no limit
  // What the host-side memory check allows while a new limit below what the container held works
  // as a ceiling (a resize, docs/resize.md; the guard-floor file): its limit before; 0 = none.
  uint64_t guard_floor_bytes = 0;
};

// The file in an allocation folder that holds FolderDevice::guard_floor_bytes ("floor.<i>=bytes").
inline constexpr char kGuardFloorFile[] = "guard-floor";

struct AllocationFolder {
  std::string id;    // the allocation ID (the folder's name)
  std::string path;  // the folder
  std::string ns, pod, container;
  std::string claim;  // a DRA claim's folder: the claim's name (pod and container are empty)
  std::vector<FolderDevice> devices;  // by container device index
  // From the pids file; nullopt when it is missing or of another version.
  std::optional<std::vector<uint32_t>> host_pids;
};

// The folders whose owner.json names a pod or a DRA claim, in directory order.
std::vector<AllocationFolder> ReadAllocationFolders(const std::string& state_dir);

}  // namespace tessera::node
