// Reads the cluster's GPU picture from the API server, the way the scheduler itself sees it:
// nodes' `tessera.io/gpus` inventories, the `tessera.io/allocation` decisions of bound pods that
// are not finished (and not marked `tessera.io/allocation-failed`), and the pods still waiting for
// the Tessera scheduler with the reason kube-scheduler left (the PodScheduled condition's message,
// else the newest FailedScheduling event); the DRA claims of gpu.tessera.io (dra_claims.h); and
// the namespaces' GPU quotas (ResourceQuotas on Tessera's names) with their usage, counted from
// those pods, claims and nodes as the scheduler's quota ledger counts them (docs/quotas.md).
// Thread-compatible; the Client is thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "inspect/cluster_view.h"
#include "kube/client.h"
#include "scheduler/dialect_config.h"

namespace tessera::inspect {

struct ApiSourceOptions {
  // Pods with this schedulerName, or asking for one of `resources`, count as Tessera pods.
  std::string scheduler_name = "tessera";
  std::vector<std::string> resources;  // the dialects' resource names
  // The dialects the quotas' usage is counted in (the scheduler's defaults).
  scheduler::DialectConfig dialects;
  // Only the pods, events and claims of this namespace ("" = every namespace); the GPUs then show
  // what this namespace holds of them.
  std::string ns;
};

struct ApiSnapshot {
  ClusterView view;                    // not yet Finish()ed
  std::vector<std::string> all_nodes;  // every node, GPU or not (for KeepOnlyNode)
};

// Errors: the Client's (kUnavailable when the server cannot be reached, kPermissionDenied...).
// ResourceQuotas that cannot be listed are a warning of the view, which then has no quotas.
Result<ApiSnapshot> ReadFromApiServer(kube::Client& client, const ApiSourceOptions& options);

}  // namespace tessera::inspect
