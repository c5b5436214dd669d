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
//    "pending":[{"pod","uid","containers":[{"name","init","request"}],
//      "filter"?:{"time","nodesChecked","fits":[...],"fitsLeftOut",
//        "reasons":[{"node","reason","unresolvable"}],"reasonsLeftOut"}}],
//    "draShares":[{"claim","uid","node","device","gpuIndex"?,"gpuUuid"?,"memoryMiB","wholeMemory",
//      "cores","pods":[...],"dra":true}],
//    "warnings":[...],
//    "quotas":[{"namespace","name","limits":{"memoryBytes"?,"cores"?},
//      "used":{"memoryBytes","cores"}}]}
// One quota per ResourceQuota on Tessera's names (QuotaLedger::Quotas), by namespace and name;
// "used" is the namespace's, the same for each of its quotas; a limit the quota does not set is
// absent. cores are percent of one GPU. "filter" is the scheduler's last filter of the pending pod
// (filter_memory.h), absent when it has not filtered the pod. A DRA share's memoryMiB is its
// consumed memory, or the GPU's virtual memory when it consumed none (wholeMemory); DRA shares
// are not in the GPUs' usedMiB, usedCores and pods (kube-scheduler places them, dra_shares.h).
// "warnings" are the claims' results that cannot be read.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "scheduler/cluster_state.h"
#include "scheduler/dra_shares.h"
#include "scheduler/filter_memory.h"
#include "scheduler/quota.h"

namespace tessera::scheduler {

// What /inspect shows beside the state: the pending pods' last filters and the DRA shares.
struct InspectExtras {
  std::map<std::string, FilterRecord> filters;  // by namespace/name
  DraShareTable::Contents dra;
};

nlohmann::json InspectJson(const StateSnapshot& state,
                           const std::vector<NamespaceQuotas>& quotas = {},
                           const InspectExtras& extras = {});

}  // namespace tessera::scheduler
