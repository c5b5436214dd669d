// Fitting one pod onto one node's GPUs: the core of filter, prioritize and bind.
//
// Fit() decides whether a PodRequest fits a node's GPUs given their current usage and, when asked,
// which GPUs each container gets (the GPU policy; a container's GPUs distinct; a multi-GPU
// container on one NUMA node when one has enough GPUs) or why it does not fit (a sentence naming
// sizes). Init containers reuse the pod's GPUs where they can and are charged only above what the
// pod already holds. The allocation Fit returns gives, through ChargesOf (protocol.h), exactly the
// charge Fit checked. Pure functions over the caller's data; the caller holds the node's lock.
// FitScratch is working memory reused between calls (one per thread).
//
//   FitOutput out;
//   if (!Fit(request, node.slots, {.want_reason = true}, scratch, &out)) Refuse(out.reason);
//
// Policies and the init rule: docs/scheduler.md, "Request dialects" and "Selection and policies".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "scheduler/protocol.h"
#include "scheduler/request.h"

namespace tessera::scheduler {

// One GPU of a node with what the pods on it hold. Memory is placed against the GPU's virtual
// memory (info.virtual_memory_mib(): its memory x the node's device-memory-scaling), which is
// also what a request without memory, or a percentage, takes of it.
struct GpuSlot {
  GpuInfo info;
  uint64_t used_mib = 0;  // of the virtual memory
  int used_cores = 0;
  int used_slots = 0;      // vGPU slots taken (GpuInfo::slots)
  int pods = 0;            // pods holding a charge on it
  int exclusive_pods = 0;  // of those, the ones holding it exclusively
  bool operator==(const GpuSlot&) const = default;
};

struct FitScratch {
  std::vector<uint64_t> free_mib;
  std::vector<int> free_cores;
  std::vector<uint64_t> pod_mib;
  std::vector<int> pod_cores;
  std::vector<int> free_slots;  // INT_MAX where the GPU does not count slots
  std::vector<int> pod_slots;
  std::vector<char> eligible;
  std::vector<char> pod_exclusive;
  std::vector<int> candidates;
  std::vector<int> chosen;
  std::vector<int> order;
};

struct FitOutput {
  Allocation allocation;     // filled when `want_allocation`
  uint64_t charged_mib = 0;  // memory the pod adds to the node
  std::string reason;        // filled on failure when `want_reason`
};

struct FitOptions {
  Policy gpu_policy = Policy::kBinpack;
  bool want_allocation = false;
  bool want_reason = false;
  bool ignore_usage = false;  // fit against the empty node (could it ever fit here?)
};

// True when `request` fits `gpus`. `out` may be null when nothing is wanted back.
bool Fit(const PodRequest& request, std::span<const GpuSlot> gpus, const FitOptions& options,
         FitScratch& scratch, FitOutput* out);

// The memory `request` would add to `gpus` (FitOutput::charged_mib), or nullopt when it does not
// fit: what prioritize scores by. Same answer as Fit; a one-container pod whose memory per GPU is
// the same on every GPU of the node gets it from the quick check, without placing.
std::optional<uint64_t> ChargedMib(const PodRequest& request, std::span<const GpuSlot> gpus,
                                   Policy gpu_policy, FitScratch& scratch);

// Score 0..10 of a node for `policy`: binpack favours the node whose GPU (virtual) memory would be
// most used after adding `charged_mib`, spread the least used.
int NodeScore(Policy policy, std::span<const GpuSlot> gpus, uint64_t charged_mib);

}  // namespace tessera::scheduler
