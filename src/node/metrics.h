// The node agent's metrics in Prometheus text format: per container (from each allocation's
// owner.json, limits file and shared region) memory used and limit and compute share per device;
// per GPU total memory, health and the memory the containers use on it.
//
//   tessera_container_memory_used_bytes{namespace,pod,container,gpu}
//   tessera_container_memory_limit_bytes{namespace,pod,container,gpu}
//   tessera_container_cores_percent{namespace,pod,container,gpu}
//   tessera_gpu_memory_total_bytes{gpu,index,model}
//   tessera_gpu_memory_used_by_containers_bytes{gpu}
//   tessera_gpu_healthy{gpu}
// The region is read without its lock (values may be a few allocations old, never torn); a
// region that is missing, of another version or too short counts as 0 used.
// Pure function over files; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "node/gpu.h"

namespace tessera::node {

std::string RenderMetrics(const std::string& state_dir, const std::vector<GpuInfo>& gpus);

}  // namespace tessera::node
