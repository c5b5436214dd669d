// The node agent's metrics in Prometheus text format, read at each scrape from each allocation's
// owner.json, limits file, pids file and shared region, the GPU list and the processes' compute
// shares: per container and GPU (tessera_container_*: memory used, of it spilled to host memory,
// and limit, compute limit and share), per DRA claim and GPU (tessera_claim_*: the same), per GPU
// (tessera_gpu_*: total memory, virtual memory (node.device-memory-scaling), memory the containers
// and claims use, health). The region is read without its lock; one that is missing, of another
// version or too short counts as 0 used, and one without the spill appendix as 0 spilled. A
// container's share is the sum of the shares of the host PIDs in its pids file, at most 100;
// without a readable pids file, or on a GPU that `shares` lacks, it has no share sample.
// Pure function over files; thread-compatible.
//
//   std::string body = RenderMetrics(node, state_dir, gpus, NvmlProcessShares(nvml, gpus));
//
// Every family, its labels and why: docs/metrics.md.
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

// The families of the node `node` (its name: the node and Hostname labels, common/metric_labels.h).
std::string RenderMetrics(const std::string& node, const std::string& state_dir,
                          const std::vector<GpuInfo>& gpus, const ProcessShares& shares = {});

// Appends tessera_node_unverified_annotations_total{annotation}: the values the agent refused
// because their signature is missing or does not verify.
void RenderUnverified(std::string& out, const annotations::Signing& signing);

// Appends tessera_node_memory_overuses_total (containers found over their memory limit by the
// host-side check, once per episode) and tessera_node_memory_guard_kills_total (processes it
// killed); nothing when `guard` is null (the check is off).
void RenderMemoryGuard(std::string& out, const MemoryGuard* guard);

}  // namespace tessera::node
