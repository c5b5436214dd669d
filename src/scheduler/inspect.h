// The JSON of GET /inspect: nodes with their GPUs and usage, the pods holding GPUs (with their
// decisions), the pods waiting for one, and the namespaces' GPU quotas with what each namespace
// uses against them. Read by `tessera inspect`. Pure function of a snapshot and the quotas.
// memoryMiB is the GPU's physical memory, virtualMemoryMiB that times memoryScaling (the node's
// device-memory-scaling), which usedMiB is placed against.
//
//   {"nodes":[{"name","ready","inventoryError","gpus":[{"uuid","index","model","numa","healthy",
//     "memoryMiB","memoryScaling","virtualMemoryMiB","usedMiB","usedCores","pods","exclusive"}],
//     "unknownGpus":[...]}],
//    "allocations":[{"pod","uid","node","reserved","allocation":{...}}],
//    "pending":[{"pod","uid","containers":[{"name","init","request"}]}],
//    "quotas":[{"namespace","name","limits":{"memoryBytes"?,"cores"?},
//      "used":{"memoryBytes","cores"}}]}
// One quota per ResourceQuota on Tessera's names (QuotaLedger::Quotas), by namespace and name;
// "used" is the namespace's, the same for each of its quotas; a limit the quota does not set is
// absent. cores are percent of one GPU.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "scheduler/cluster_state.h"
#include "scheduler/quota.h"

namespace tessera::scheduler {

nlohmann::json InspectJson(const StateSnapshot& state,
                           const std::vector<NamespaceQuotas>& quotas = {});

}  // namespace tessera::scheduler
