// Quota: the pure accounting of namespace GPU quotas in one unit across all dialects.
//
// A ResourceQuota limits a namespace's GPU memory in bytes (requests.tessera.io/gpu-memory) and its
// compute in percent of a GPU (requests.tessera.io/gpu-cores). What a pod or a DRA claim of
// Tessera's driver counts against them comes from the one request model (request.h), never from a
// dialect: memory per GPU times the GPUs, compute percent per GPU times the GPUs, and for a pod the
// larger of its init containers' peak and its app containers' sum, per quantity, as Kubernetes
// counts requests. A share without a compute limit (cores 0, exclusive, a whole GPU) counts 100
// percent per GPU: it may use all of it. Memory given as a share of the GPU (percent, a whole GPU,
// a claim without a memory request) is kept as that share and counted at the largest GPU of the
// cluster when a quota is checked (GpuAsk::Resolve). Pure values and functions: thread-safe.
//
//   ASSIGN_OR_RETURN(std::optional<QuotaLimits> limits, LimitsOfQuota(resource_quota_json));
//   PodAsk ask = AskOfRequest(request);
//   GpuUsage asked = ask.Resolve(largest_gpu_mib);
//
// Why and the rules in full: docs/quotas.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scheduler/request.h"

namespace tessera::scheduler {

// The ResourceQuota names, in spec.hard.
inline constexpr char kQuotaGpuMemory[] = "requests.tessera.io/gpu-memory";  // bytes
inline constexpr char kQuotaGpuCores[] = "requests.tessera.io/gpu-cores";    // percent of a GPU

// What a namespace uses, or an object asks for, in the units of the limits.
struct GpuUsage {
  int64_t memory_bytes = 0;
  int64_t cores = 0;  // percent of one GPU: 200 = two whole GPUs' compute
  GpuUsage& operator+=(const GpuUsage& o) {
    memory_bytes += o.memory_bytes;
    cores += o.cores;
    return *this;
  }
  bool operator==(const GpuUsage&) const = default;
};

// One ask whose memory may be a share of a GPU not known yet.
struct GpuAsk {
  int64_t memory_bytes = 0;    // memory given in bytes, all GPUs together
  int64_t memory_percent = 0;  // memory given as percent of a GPU, all GPUs together (200 = 2)
  int64_t cores = 0;           // percent of a GPU, all GPUs together
  // The usage when the largest GPU of the cluster has `largest_gpu_mib` (0 = none known: the
  // shares count nothing).
  GpuUsage Resolve(uint64_t largest_gpu_mib) const;
  GpuAsk& operator+=(const GpuAsk& o);
  bool empty() const { return memory_bytes == 0 && memory_percent == 0 && cores == 0; }
  bool operator==(const GpuAsk&) const = default;
};

// A pod's or a claim's ask: init containers run one at a time, app containers together.
struct PodAsk {
  std::vector<GpuAsk> init;  // one per init container that uses GPUs
  GpuAsk app;                // app containers and sidecars, summed
  // Per quantity, the larger of the init containers' peak and the app containers' sum.
  GpuUsage Resolve(uint64_t largest_gpu_mib) const;
  bool empty() const;
  bool operator==(const PodAsk&) const = default;
};

// The limits one ResourceQuota sets on Tessera's names.
struct QuotaLimits {
  std::string name;  // the ResourceQuota's metadata.name
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> cores;
  bool operator==(const QuotaLimits&) const = default;
};

// One namespace's quotas and what counts against them, as /inspect and /metrics show them.
struct NamespaceQuotas {
  std::string ns;
  std::vector<QuotaLimits> limits;  // by quota name
  GpuUsage used;
  bool operator==(const NamespaceQuotas&) const = default;
};

// The ask of one GPU request, all its GPUs together.
GpuAsk AskOfGpu(const GpuRequest& gpu);
// The ask of a pod's request (request.h).
PodAsk AskOfRequest(const PodRequest& request);
// The ask of a pod whose decision is `decision` (may be null): AskOfRequest, except that a
// container the decision marks `resized` (docs/resize.md) counts what its devices now hold, each
// device's memory and its cores (100 where it has no compute limit or holds the GPU exclusively).
PodAsk AskOfPod(const PodRequest& request, const annotations::Allocation* decision);

// The ask of a ResourceClaim's spec, for its requests of the DeviceClass gpu.tessera.io (each
// subrequest of firstAvailable: the largest, per quantity; allocationMode All: `max_gpus`, the
// most GPUs one node has). Requests for administrative access count nothing. InvalidArgument
// when a count or capacity is not a whole quantity, naming the request.
Result<GpuAsk> AskOfClaimSpec(const nlohmann::json& spec, int max_gpus);

// Tessera's limits in a ResourceQuota (v1 JSON); nullopt when its spec.hard names neither.
// InvalidArgument when one of them is not a whole quantity.
Result<std::optional<QuotaLimits>> LimitsOfQuota(const nlohmann::json& resource_quota);

// Empty when `asked` fits under `limits` beside `used`; otherwise the refusal, in the units of
// the limit it passes: "namespace ml: GPU memory quota 10 GiB (ResourceQuota gpu-quota): 6 GiB
// used, 6 GiB asked (<what>), 4 GiB left". `what` says what asked, in the object's own terms.
std::string QuotaDenial(const std::string& ns, const QuotaLimits& limits, const GpuUsage& used,
                        const GpuUsage& asked, const std::string& what);

// "10 GiB", "1536 MiB", "1000 bytes": the largest binary unit that says `bytes` exactly.
std::string BytesText(int64_t bytes);

}  // namespace tessera::scheduler
