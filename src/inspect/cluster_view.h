// ClusterView: what `tessera inspect` shows, built from either source (the API server's
// annotations or the scheduler's GET /inspect) so that both render the same way.
//
//   ClusterView view;
//   NodeView& node = view.AddNode("gpu-1", inventory);         // from tessera.io/gpus
//   view.AddAllocation("default/p1", allocation);               // from tessera.io/allocation
//   view.AddDraShare("gpu-1", "gpu-0", share, false);           // from a ResourceClaim
//   view.pending.push_back({"default/p2", "0/2 nodes are available: ..."});
//   view.Finish();                                              // sorts, before rendering
//
// Plain values: thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scheduler/protocol.h"
#include "scheduler/quota.h"

namespace tessera::inspect {

// One pod's share of one GPU (its charge: init peak against app sum, as the scheduler counts),
// or, with `dra`, one DRA claim's share (its consumed capacity), which all its pods share.
struct PodShare {
  std::string pod;  // namespace/name; for a DRA share the ResourceClaim's
  // The pod's containers on this GPU; for a DRA share the pods the claim is reserved for
  // (namespace/name).
  std::vector<std::string> containers;
  uint64_t memory_mib = 0;
  int cores = 0;
  bool exclusive = false;
  bool dra = false;
};

struct GpuView {
  int index = -1;  // -1: a GPU that pods hold but the node's inventory does not list
  std::string uuid;
  std::string model;
  int numa = -1;
  bool healthy = true;
  uint64_t memory_mib = 0;  // physical
  // The node's device-memory-scaling and the virtual memory it gives (memory_mib x
  // memory_scaling), which the pods' shares (used_mib) are placed against.
  double memory_scaling = 1;
  uint64_t virtual_memory_mib = 0;
  uint64_t used_mib = 0;
  int used_cores = 0;  // of 100
  std::vector<PodShare> pods;

  // The distinct pods holding a share (a DRA share counts the pods it is reserved for).
  size_t PodCount() const;
};

struct NodeView {
  std::string name;
  std::string address;  // InternalIP from the Node's status; "" when the source has none
  std::string error;    // why the node has no usable inventory ("" when it has one)
  std::vector<GpuView> gpus;
};

struct PendingPod {
  std::string pod;     // namespace/name
  std::string reason;  // what the scheduler (or kube-scheduler) said, or what the pod asks for
};

// One namespace GPU quota (a ResourceQuota on Tessera's names, docs/quotas.md) and what its
// namespace uses against it, as the scheduler's quota ledger counts it.
struct QuotaView {
  std::string ns;
  scheduler::QuotaLimits limits;  // limits.name: the ResourceQuota's name
  scheduler::GpuUsage used;       // the namespace's, the same for each of its quotas
};

struct Totals {
  size_t nodes = 0, gpus = 0, pods = 0;
  uint64_t memory_mib = 0, virtual_memory_mib = 0, used_mib = 0;
  int cores = 0, used_cores = 0;
};

struct ClusterView {
  std::vector<NodeView> nodes;
  std::vector<PendingPod> pending;
  // Objects that could not be read (a malformed annotation): shown, never silently dropped.
  std::vector<std::string> warnings;
  // The namespaces' GPU quotas; nullopt when the source does not count them (the API server, or
  // a scheduler from before issue 36).
  std::optional<std::vector<QuotaView>> quotas;

  NodeView& AddNode(const std::string& name, const std::vector<scheduler::GpuInfo>& inventory);
  // Charges `allocation` to the GPUs of its node (allocation.node); a node or GPU not in the view
  // is added (the GPU with index -1), so no usage is hidden.
  void AddAllocation(const std::string& pod, const scheduler::Allocation& allocation);
  // Charges a DRA claim's `share` to device `device` ("gpu-<index>") of node `node` (the pool);
  // `whole_memory`: the share's memory is the GPU's whole (virtual) memory (no consumed memory
  // recorded).
  // A node or GPU not in the view is added (the GPU with index -1, named by the device).
  void AddDraShare(const std::string& node, const std::string& device, PodShare share,
                   bool whole_memory);
  // Keeps only node `name`. NotFound when it is not among `all_nodes` (every node the source
  // knows, GPU or not), with a suggestion; FailedPrecondition when it exists but has no GPUs here.
  Status KeepOnlyNode(const std::string& name, const std::vector<std::string>& all_nodes);
  // Sorts nodes by name, GPUs by index, pods and pending pods by name, quotas by namespace and
  // name.
  void Finish();
  Totals ComputeTotals() const;
  // The view as JSON (`-o json`); the format is in docs/inspect.md.
  nlohmann::json ToJson() const;
};

}  // namespace tessera::inspect
