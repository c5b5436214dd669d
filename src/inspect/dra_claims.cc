#include "inspect/dra_claims.h"

#include "scheduler/dra_shares.h"

namespace tessera::inspect {

void AddDraClaims(const std::vector<kube::Json>& claims, ClusterView& view) {
  for (const kube::Json& claim : claims) {
    for (scheduler::DraShare& s : scheduler::DraSharesOf(claim, view.warnings)) {
      PodShare share{.pod = s.claim, .containers = std::move(s.pods)};
      share.memory_mib = s.memory_mib.value_or(0);
      share.cores = s.cores;
      view.AddDraShare(s.node, s.device, std::move(share), !s.memory_mib.has_value());
    }
  }
}

}  // namespace tessera::inspect
