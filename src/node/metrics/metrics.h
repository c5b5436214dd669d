// The node agent's metrics in Prometheus text format: per container (from each allocation's
// owner.json, limits file, pids file and shared region) memory used and limit, compute limit and
// the compute share it used per device; the same per DRA claim (its folder's files; one region
// for every pod that uses the claim) but the share, for want of its containers' PIDs; per GPU total
// memory, health and the memory the containers and claims use on it.
//
//   tessera_container_memory_used_bytes{namespace,pod,container,gpu}
//   tessera_container_memory_limit_bytes{namespace,pod,container,gpu}
//   tessera_container_compute_limit_percent{namespace,pod,container,gpu}
//   tessera_container_compute_share_percent{namespace,pod,container,gpu}
//   tessera_claim_memory_used_bytes{namespace,claim,gpu}
//   tessera_claim_memory_limit_bytes{namespace,claim,gpu}
//   tessera_claim_compute_limit_percent{namespace,claim,gpu}
//   tessera_gpu_memory_total_bytes{gpu,index,model}
//   tessera_gpu_memory_used_by_containers_bytes{gpu}
//   tessera_gpu_healthy{gpu}
// The region is read without its lock (values may be a few allocations old, never torn); a
// region that is missing, of another version or too short counts as 0 used. The compute share is
// the sum of the `shares` of the host PIDs in the allocation's pids file (src/abi/host_pids.h),
// at most 100; a container without a readable pids file, or on a GPU that `shares` lacks, has no
// share sample.
// Pure function over files; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "annotations/signing.h"
#include "node/enforcement/memory_guard.h"
#include "node/gpu/gpu.h"

namespace tessera::node {

// Per GPU UUID: each host PID's recent share of the GPU's time, in percent (0 to 100, not rounded:
// a container's sum is rounded once).
using ProcessShares = std::map<std::string, std::map<uint32_t, double>>;

// The compute share of the processes `pids` on GPU `uuid`: the sum of their `shares`, at most 100,
// rounded to a whole percent; nullopt when `shares` does not know the GPU.
std::optional<unsigned> ContainerShare(const ProcessShares& shares, const std::string& uuid,
                                       const std::vector<uint32_t>& pids);

std::string RenderMetrics(const std::string& state_dir, const std::vector<GpuInfo>& gpus,
                          const ProcessShares& shares = {});

// Appends tessera_node_unverified_annotations_total{annotation}: the values the agent refused
// because their signature is missing or does not verify.
void RenderUnverified(std::string& out, const annotations::Signing& signing);

// Appends tessera_node_memory_overuses_total (containers found over their memory limit by the
// host-side check, once per episode) and tessera_node_memory_guard_kills_total (processes it
// killed); nothing when `guard` is null (the check is off).
void RenderMemoryGuard(std::string& out, const MemoryGuard* guard);

}  // namespace tessera::node
