// LimitsRefresher: keeps the limits file of every running container at its pod's current decision,
// so that a resize (docs/resize.md) reaches the container without a restart: when the decision's
// memory or compute for a container differs from its limits file, the file is replaced whole (under
// a temporary name, renamed into place, through Allocator::RewriteLimits), keeping its GPUs; the
// in-container library picks it up. A decision that does not verify, names other GPUs than the
// file (a resize never moves a container), or cannot be read leaves the file as it is, logged once
// per value. When the new memory limit is below what the container's processes hold on a GPU (its
// shared region), the pod gets a Warning Event: the library refuses new allocations until usage
// falls under the limit, and nothing held is taken away: the host-side memory check allows the
// limit before (the folder's guard-floor file, allocation_folders.h) until usage falls under the
// new one, when the file is removed. Nothing is kept but what was reported, so
// an agent restart converges at its first pass. Call from one thread (the agent's housekeeping
// loop, which also removes folders).
//
//   LimitsRefresher limits(allocator, pods, writer, {.state_dir = dir, .node_name = "n1"});
//   limits.RunOnce(gpus);  // every node.pid-refresh
#pragma once

#include <map>
#include <string>
#include <vector>

#include "annotations/signing.h"
#include "node/allocation/allocator.h"
#include "node/gpu/gpu.h"
#include "node/pods/pod_source.h"

namespace tessera::node {

struct LimitsRefresherOptions {
  std::string state_dir = "/var/lib/tessera";
  std::string node_name;
  annotations::Signing signing;  // verifies tessera.io/allocation (unsigned mode: no keys)
};

// The Event reason when a new limit is below what the container holds.
inline constexpr char kAboveNewLimitReason[] = "GpuMemoryAboveNewLimit";

class LimitsRefresher {
 public:
  // All must outlive the refresher.
  LimitsRefresher(Allocator& allocator, const PodSource& pods, ApiWriter& writer,
                  LimitsRefresherOptions options);
  // One pass over the allocation folders of containers; returns the IDs whose limits file it
  // rewrote.
  std::vector<std::string> RunOnce(const std::vector<GpuInfo>& gpus);

 private:
  // Logs `why` for allocation `id` unless it was the last thing logged for it.
  void Report(const std::string& id, const std::string& why);

  Allocator& allocator_;
  const PodSource& pods_;
  ApiWriter& writer_;
  const LimitsRefresherOptions options_;
  std::map<std::string, std::string> reported_;  // allocation ID -> the last problem logged
};

}  // namespace tessera::node
