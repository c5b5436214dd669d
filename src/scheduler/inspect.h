// The JSON of GET /inspect: nodes with their GPUs and usage, the pods holding GPUs (with their
// decisions) and the pods waiting for one. Read by `tessera inspect`. Pure function of a snapshot.
// memoryMiB is the GPU's physical memory, virtualMemoryMiB that times memoryScaling (the node's
// device-memory-scaling), which usedMiB is placed against.
//
//   {"nodes":[{"name","ready","inventoryError","gpus":[{"uuid","index","model","numa","healthy",
//     "memoryMiB","memoryScaling","virtualMemoryMiB","usedMiB","usedCores","pods","exclusive"}],
//     "unknownGpus":[...]}],
//    "allocations":[{"pod","uid","node","reserved","allocation":{...}}],
//    "pending":[{"pod","uid","containers":[{"name","init","request"}]}]}
#pragma once

#include <nlohmann/json.hpp>

#include "scheduler/cluster_state.h"

namespace tessera::scheduler {

nlohmann::json InspectJson(const StateSnapshot& state);

}  // namespace tessera::scheduler
