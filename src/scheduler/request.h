// The one request model every dialect parses into.
//
// A PodRequest lists the containers of a pod that use GPUs, each with a GpuRequest (how many
// distinct physical GPUs, and per GPU: memory, compute percent, mode, exclusivity), plus the
// pod-wide selection constraints. Policies and accounting only see this model, never the dialect
// a pod was written in. Plain values: thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "annotations/allocation.h"

namespace tessera::scheduler {

using annotations::ComputeMode;
using annotations::ComputeModeName;

enum class Policy { kBinpack, kSpread };
const char* PolicyName(Policy policy);  // "binpack" / "spread"
std::optional<Policy> ParsePolicy(const std::string& text);

struct GpuRequest {
  int count = 0;  // distinct physical GPUs, >= 1 for a container that uses GPUs
  // Memory per GPU: either memory_mib (> 0) or memory_percent of each GPU's total (1..100), its
  // virtual memory where the node scales it (node_fit.h). A request without memory takes the
  // whole GPU's memory (memory_percent = 100).
  uint64_t memory_mib = 0;
  int memory_percent = 100;
  int cores = 0;        // compute percent per GPU, 0 = no compute limit (and no compute charge)
  int cores_limit = 0;  // elastic mode: the percent it may burst up to (>= cores), 0 = none
  ComputeMode mode = ComputeMode::kHard;
  bool exclusive = false;  // no other pod may use these GPUs
  std::string dialect;     // which dialect it came from, for messages only
  // Takes one vGPU slot on each of its GPUs (GpuInfo::slots): kubelet admits the slot-counted
  // resource (the vGPU dialect's nvidia.com/gpu) per container and GPU, whatever the memory.
  bool slot = false;

  // The memory this request needs on a GPU with `total_mib` of memory.
  uint64_t MemoryOn(uint64_t total_mib) const {
    return memory_mib > 0 ? memory_mib : total_mib * static_cast<uint64_t>(memory_percent) / 100;
  }
  // "1 GPU x 4096 MiB, 30% cores" for messages.
  std::string Describe() const;
  bool operator==(const GpuRequest&) const = default;
};

struct ContainerRequest {
  std::string name;
  bool init = false;  // a plain init container: runs before, and not beside, the app containers
  GpuRequest gpu;
  bool operator==(const ContainerRequest&) const = default;
};

// Which GPUs a pod may use. Type filters are case-insensitive substrings of the model name; UUID
// filters are exact (case-insensitive). Empty include lists allow everything.
struct Selection {
  std::vector<std::string> use_types;
  std::vector<std::string> nouse_types;
  std::vector<std::string> use_uuids;
  std::vector<std::string> nouse_uuids;
  // The annotations the include lists came from, for messages: "use-gputype",
  // "tessera.io/gpu-model", or both joined by '+'; likewise for the UUIDs.
  std::string use_types_from = "use-gputype";
  std::string use_uuids_from = "use-gpuuuid";

  bool Allows(const std::string& model, const std::string& uuid) const;
  bool empty() const {
    return use_types.empty() && nouse_types.empty() && use_uuids.empty() && nouse_uuids.empty();
  }
  // "use-gputype=A100, nouse-gpuuuid=GPU-1" for messages, naming the annotations the pod used.
  std::string Describe() const;
  bool operator==(const Selection&) const = default;
};

struct PodRequest {
  std::vector<ContainerRequest> containers;  // only the containers that use GPUs
  Selection selection;
  // The pod's own policies, over the scheduler's: tessera.io/policy sets both, HAMi's
  // hami.io/node-scheduler-policy and hami.io/gpu-scheduler-policy one each.
  std::optional<Policy> node_policy;
  std::optional<Policy> gpu_policy;

  bool empty() const { return containers.empty(); }
  bool operator==(const PodRequest&) const = default;
};

}  // namespace tessera::scheduler
