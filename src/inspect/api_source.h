// Reads the cluster's GPU picture from the API server, the way the scheduler itself sees it:
// nodes' `tessera.io/gpus` inventories, the `tessera.io/allocation` decisions of bound pods that
// are not finished (and not marked `tessera.io/allocation-failed`), and the pods still waiting for
// the Tessera scheduler with the reason kube-scheduler left (the PodScheduled condition's message,
// else the newest FailedScheduling event); and the DRA claims of gpu.tessera.io (dra_claims.h).
// Thread-compatible; the Client is thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "inspect/cluster_view.h"
#include "kube/client.h"

namespace tessera::inspect {

struct ApiSourceOptions {
  // Pods with this schedulerName, or asking for one of `resources`, count as Tessera pods.
  std::string scheduler_name = "tessera";
  std::vector<std::string> resources;  // the dialects' resource names
  // Only the pods, events and claims of this namespace ("" = every namespace); the GPUs then show
  // what this namespace holds of them.
  std::string ns;
};

struct ApiSnapshot {
  ClusterView view;                    // not yet Finish()ed
  std::vector<std::string> all_nodes;  // every node, GPU or not (for KeepOnlyNode)
};

// Errors: the Client's (kUnavailable when the server cannot be reached, kPermissionDenied...).
Result<ApiSnapshot> ReadFromApiServer(kube::Client& client, const ApiSourceOptions& options);

}  // namespace tessera::inspect
