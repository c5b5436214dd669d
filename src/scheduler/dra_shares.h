// The GPU shares placed through Dynamic Resource Allocation, as the scheduler sees them: every
// result of Tessera's DRA driver (gpu.tessera.io) in a ResourceClaim's status.allocation, read
// the way docs/dra.md says an allocation means: device `gpu-<index>` of the pool named after the
// node, holding the claim's consumedCapacity {memory, cores} (no consumed memory: the GPU's whole
// memory). kube-scheduler places these claims without the Tessera scheduler, so they are shown
// beside its own shares, never charged in ClusterState.
//
//   std::vector<std::string> warnings;
//   for (const DraShare& s : DraSharesOf(claim, warnings)) ...;   // pure
//   DraShareTable table;                                           // fed by the claim informer
//   table.OnClaim(EventType::kAdded, claim);
//
// DraSharesOf is pure. DraShareTable is thread-safe (one mutex, nothing called while held).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/cluster_state.h"
#include "scheduler/dra_rewrite.h"  // kDraDriver

namespace tessera::scheduler {

struct DraShare {
  std::string claim;  // namespace/name of the ResourceClaim
  std::string uid;
  std::string node;                    // the result's pool, named after the node
  std::string device;                  // "gpu-<index>"
  std::optional<int> gpu_index;        // from the device name; nullopt when not gpu-<n>
  std::optional<uint64_t> memory_mib;  // consumedCapacity.memory; nullopt: the whole GPU's memory
  int cores = 0;                       // consumedCapacity.cores, percent; 0 = no compute limit
  std::vector<std::string> pods;       // status.reservedFor pods, namespace/name
  bool operator==(const DraShare&) const = default;
};

// One share per allocation result of gpu.tessera.io in `claim` (a resource.k8s.io/v1
// ResourceClaim as JSON). A result whose consumed capacity cannot be read is left out, with a
// line appended to `warnings` naming the claim, the device and what is wrong.
std::vector<DraShare> DraSharesOf(const nlohmann::json& claim, std::vector<std::string>& warnings);

// The DRA shares of the cluster's claims, kept current from claim watch events.
class DraShareTable {
 public:
  void OnClaim(EventType type, const nlohmann::json& claim);

  struct Contents {
    std::vector<DraShare> shares;       // by claim, then in result order
    std::vector<std::string> warnings;  // by claim
  };
  Contents Snapshot() const;

 private:
  struct Claim {
    std::vector<DraShare> shares;
    std::vector<std::string> warnings;
  };
  mutable std::mutex mu_;
  std::map<std::string, Claim> claims_;  // by namespace/name; guarded by mu_
};

}  // namespace tessera::scheduler
