// Housekeeper: removes the files of allocations whose container no longer exists (the allocation
// folder, the shared-region folder and the CDI spec): when the owner pod in owner.json is gone
// from the pod cache, was replaced (another UID) or is terminal, and `grace` after their last
// write for those that never got an owner. A pod being deleted, and running containers, keep
// their files, also across agent restarts. A DRA claim's files are kept while the ClaimOwner
// holds the claim prepared, and removed `grace` after their last write once it does not.
// Call from one thread (the agent's housekeeping loop); the Allocator is thread-safe.
//
//   Housekeeper housekeeper(allocator, pods, state_dir, std::chrono::minutes(10));
//   housekeeper.SetClaimOwner(&dra_driver);  // DRA mode
//   std::vector<std::string> removed = housekeeper.RunOnce();
//
// Why: docs/node-agent.md, "Housekeeping and restarts"; docs/dra.md, "Restarts".
#pragma once

#include <chrono>

#include "node/allocation/allocator.h"
#include "node/pods/pod_source.h"

namespace tessera::node {

// Who holds DRA claims prepared. Thread-safe.
class ClaimOwner {
 public:
  virtual ~ClaimOwner() = default;
  virtual bool Holds(const std::string& claim_uid) const = 0;
  // Unprepares the claims it holds that no pod can use any more (deleted, or no longer
  // allocated) once they have been so for `bound`: their NodeUnprepareResources never came (a
  // pod deleted while kubelet or the plugin was down). Returns their UIDs.
  virtual std::vector<std::string> ReleaseAbandoned(std::chrono::seconds bound) = 0;
};

class Housekeeper {
 public:
  Housekeeper(Allocator& allocator, const PodSource& pods, std::string state_dir,
              std::chrono::seconds grace);
  // The owner of DRA claims' files (must outlive the Housekeeper); call before the first RunOnce.
  void SetClaimOwner(ClaimOwner* claims) { claims_ = claims; }
  // One pass (the ClaimOwner first releases its abandoned claims, after `grace`); returns the
  // allocation IDs removed.
  std::vector<std::string> RunOnce();

 private:
  Allocator& allocator_;
  const PodSource& pods_;
  const std::string state_dir_;
  const std::chrono::seconds grace_;
  ClaimOwner* claims_ = nullptr;
};

}  // namespace tessera::node
