// Housekeeper: removes the files of allocations whose container no longer exists: the
// allocation folder, the shared-region folder and the CDI spec, when the owner pod recorded in
// owner.json is gone from the pod cache, was replaced (another UID) or is terminal (Succeeded or
// Failed); and, after `grace`, those that never got an owner (Allocate without
// PreStartContainer, pod rejected). A pod being deleted keeps its files: its containers run on
// through preStop hooks and the grace period, and a process they start then must find its limits.
// Running containers keep their files, also across agent restarts (nothing is wiped at start).
//
// Call from one thread (the agent's housekeeping loop); the Allocator is thread-safe.
#pragma once

#include <chrono>

#include "node/allocation/allocator.h"
#include "node/pods/pod_source.h"

namespace tessera::node {

class Housekeeper {
 public:
  Housekeeper(Allocator& allocator, const PodSource& pods, std::string state_dir,
              std::chrono::seconds grace);
  // One pass; returns the allocation IDs removed.
  std::vector<std::string> RunOnce();

 private:
  Allocator& allocator_;
  const PodSource& pods_;
  const std::string state_dir_;
  const std::chrono::seconds grace_;
};

}  // namespace tessera::node
