// ClusterState: the scheduler's cache of GPU inventory (nodes' tessera.io/gpus) and usage (the
// tessera.io/allocation of pods that are bound and not finished), fed incrementally with watch
// events (OnNode/OnPod with v1 API objects as JSON). A pod that is deleted, Succeeded or Failed,
// or marked tessera.io/allocation-failed frees its GPUs. The state depends only on the set of live
// objects, not on the order of events (a replay gives a Snapshot() that compares equal). With
// annotation signing on, values that do not verify are not trusted (annotations/signing.h).
// Bind reserves through Reserve(), under the pod's shard lock and that node's lock only (lock
// order: pod shard, then node). Nodes are never erased, so NodeState pointers stay valid for the
// life of the ClusterState. Thread-safe: every method may be called from any thread.
//
//   ClusterState state(dialects, signing);
//   RETURN_IF_ERROR(state.OnNode(EventType::kAdded, node));
//   RETURN_IF_ERROR(state.OnPod(EventType::kModified, pod));
//
// Why: docs/scheduler.md, "Bind, reservations and release"; docs/annotations.md, "Signatures".
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "annotations/signing.h"
#include "common/status.h"
#include "scheduler/dialect.h"
#include "scheduler/node_fit.h"
#include "scheduler/protocol.h"
#include "scheduler/request.h"

namespace tessera::scheduler {

enum class EventType { kAdded, kModified, kDeleted };

struct PodId {
  std::string ns;
  std::string name;
  std::string uid;  // may be empty when the caller does not know it
  std::string Key() const { return ns + "/" + name; }
};

// GPUs held on a node for a pod that preempted others there, until it is bound (preemption.h):
// pods of the same or lower priority see them as used.
struct Nomination {
  std::string pod;  // namespace/name
  int priority = 0;
  std::vector<GpuCharge> charges;
  std::chrono::steady_clock::time_point expires;
};

// Who reads a node: another pod's nomination counts as used when its priority is at least this.
struct Claimant {
  std::string_view pod;  // namespace/name, "" = nobody's own nomination is skipped
  int priority = 0;
};

// The filter reason of a node whose agent does not serve its devices now (its inventory's
// "serving" is false).
inline constexpr char kNotServing[] =
    "the node agent's device plugins are not registered with kubelet now (the agent or kubelet "
    "is starting or stopping): kubelet would fail the pod";

// One node's GPUs. Internal to ClusterState; exposed only so Read() can be a template.
struct NodeState {
  mutable std::mutex mu;
  // Protected by mu:
  bool present = false;                    // the node exists and carries a valid inventory
  bool serving = true;                     // its agent's device plugins are registered
  std::string inventory_error;             // why its annotation was rejected, empty when fine
  std::vector<GpuSlot> slots;              // in inventory order
  std::map<std::string, GpuSlot> orphans;  // usage on UUIDs the inventory does not list
  size_t refused = 0;                      // fingerprint of the last refusal reported, 0 = none
  std::vector<Nomination> nominations;
};

// A pod that holds GPUs on a node, as preemption sees it.
struct PodOnNode {
  PodId pod;
  int priority = 0;
  bool terminating = false;  // deleted, waiting for its containers to end
  std::vector<GpuCharge> charges;
};

// What preemption needs to know of a pod that waits for a node, from its pod events.
struct PendingPriority {
  int priority = 0;
  bool may_preempt = true;  // spec.preemptionPolicy is not Never
};

// A copy of the state, for /inspect, /metrics and tests.
struct StateSnapshot {
  struct Node {
    bool present = false;
    bool serving = true;
    std::string inventory_error;
    std::vector<GpuSlot> gpus;
    std::map<std::string, GpuSlot> orphans;
    bool operator==(const Node&) const = default;
  };
  struct Pod {
    std::string uid;
    std::string node;
    bool reserved = false;  // reserved by a bind whose pod update has not been seen yet
    std::optional<Allocation> allocation;
    std::optional<PodRequest> pending;  // unbound pod waiting for a decision
    bool operator==(const Pod&) const = default;
  };
  std::map<std::string, Node> nodes;
  std::map<std::string, Pod> pods;  // by namespace/name
  bool operator==(const StateSnapshot&) const = default;
};

class ClusterState {
 public:
  explicit ClusterState(DialectConfig dialects, annotations::Signing signing = {});
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  // Watch events. Objects that are not what they should be are logged and skipped: one bad object
  // never stops the others. Returns the problem for callers that want it (tests, counters).
  Status OnNode(EventType type, const nlohmann::json& node);
  Status OnPod(EventType type, const nlohmann::json& pod);

  // The node named `name`, or nullptr when it has never been seen.
  NodeState* Find(const std::string& name) const;
  // Find for many names under one lock: out[i] is the node of names[i] or nullptr.
  void FindAll(std::span<const std::string> names, std::vector<const NodeState*>& out) const;
  // Calls fn(present, gpus) under the node's lock and returns what fn returns.
  template <typename F>
  auto Read(const NodeState& node, F&& fn) const {
    std::lock_guard<std::mutex> lock(node.mu);
    return fn(node.present, std::span<const GpuSlot>(node.slots));
  }
  // Read as `who` sees the node: with the GPUs nominated for other pods of at least its priority
  // counted as used.
  template <typename F>
  auto ReadFor(const NodeState& node, const Claimant& who, F&& fn) const {
    std::lock_guard<std::mutex> lock(node.mu);
    return fn(node.present, ViewFor(node, who));
  }

  // Bind: under the pod's and the node's locks, calls decide(gpus) (the node as the pod sees it,
  // ReadFor) and charges the allocation it returns; the pod's nomination, if any, ends. A node
  // whose agent is not serving its devices is Unavailable (kubelet would fail the pod). Errors:
  // NotFound (node unknown or without inventory), AlreadyExists (the pod already holds GPUs), or
  // decide's own error; none of them changes anything.
  Result<Allocation> Reserve(
      const PodId& pod, const std::string& node,
      const std::function<Result<Allocation>(std::span<const GpuSlot>)>& decide);
  // Undoes Reserve for `pod` if its reservation still stands (the Binding failed).
  void CancelReservation(const PodId& pod);

  // A resize (docs/resize.md): under the pod's and its node's locks, calls decide(decision, gpus)
  // with the pod's charged decision and its node's GPUs as the pod sees them (its own charge
  // included), and charges the allocation decide returns instead, until the pod's watch event
  // carries it (an event still carrying the decision it replaced keeps the new charge) or
  // CancelResize. Returns the decision it replaced. Errors: NotFound (the pod holds no GPUs, or
  // is not the pod of `pod.uid`), FailedPrecondition (being bound, being deleted), or decide's
  // own error; none of them changes anything.
  Result<Allocation> Resize(
      const PodId& pod,
      const std::function<Result<Allocation>(const Allocation&, std::span<const GpuSlot>)>& decide);
  // Undoes Resize: charges `previous` again if the resize still stands (its patch failed).
  void CancelResize(const PodId& pod, const Allocation& previous);

  // The request of an unbound pod, recorded from its pod events only: what a filter request
  // says about a pod is never remembered, so clients cannot make the state grow.
  std::optional<PodRequest> Pending(const PodId& pod) const;
  // The request of `pod` if bind may bind it: the pod watch has shown it unbound, with this UID
  // (when given) and with spec.schedulerName `scheduler` (when not empty). NotFound when the
  // watch shows no such unbound pod; FailedPrecondition for another UID or another scheduler;
  // AlreadyExists when it holds or is being given GPUs. Each message says what was found.
  // `uid`, when given, is set to the UID the watch showed.
  Result<PodRequest> Bindable(const PodId& pod, const std::string& scheduler,
                              std::string* uid = nullptr) const;
  // Drops the pending request of a pod that holds no GPUs (bound without any).
  void ForgetPending(const PodId& pod);
  // The priority of an unbound pod, from its pod events (nullopt: not known as unbound).
  std::optional<PendingPriority> PriorityOf(const PodId& pod) const;

  // Preemption (preemptor.h). The pods holding GPUs on each of `nodes`, in one pass over all
  // pods; a node without any is left out.
  std::unordered_map<std::string, std::vector<PodOnNode>> PodsOn(
      std::span<const std::string> nodes) const;
  // A copy of `node`'s GPUs as `who` sees them (ReadFor); empty when the node is unknown, has no
  // usable inventory, or its agent does not serve its devices now.
  std::vector<GpuSlot> GpusFor(const std::string& node, const Claimant& who) const;
  // Holds `charges` on `node` for `pod` until it is bound or gone, or `expires`; replaces an
  // earlier nomination of the pod. NotFound when the node is unknown.
  Status Nominate(const PodId& pod, const std::string& node, int priority,
                  std::vector<GpuCharge> charges, std::chrono::steady_clock::time_point expires);
  // The node `pod` is nominated on, if its nomination still stands.
  std::optional<std::string> NominatedNode(const PodId& pod) const;
  void ClearNomination(const std::string& pod_key);

  // Pod events seen so far; WaitForPodEvent waits until the count passes `seen` or `deadline`.
  uint64_t PodEvents() const;
  void WaitForPodEvent(uint64_t seen, std::chrono::steady_clock::time_point deadline) const;

  // Why `request` could not fit on any known node even with the node empty, naming the node
  // with the most GPU memory and its reason; nullopt when some node could hold it, or when no
  // GPU node is known yet.
  std::optional<std::string> WhyNoNodeCouldFit(const PodRequest& request) const;
  // The largest number of healthy GPUs on one node (0 when no node is known).
  int MaxGpusPerNode() const;
  // Number of nodes with an inventory.
  size_t NodeCount() const;

  StateSnapshot Snapshot() const;
  const DialectConfig& dialects() const { return dialects_; }
  const annotations::Signing& signing() const { return signing_; }

 private:
  struct PodRecord {
    std::string uid;
    std::string node;
    bool reserved = false;
    std::optional<Allocation> allocation;
    std::vector<GpuCharge> charges;
    std::optional<PodRequest> pending;
    std::string scheduler;  // spec.schedulerName of a pending pod
    int priority = 0;       // spec.priority
    bool may_preempt = true;
    bool terminating = false;  // metadata.deletionTimestamp is set
    bool verified = false;     // signing on, and `allocation` verified or was reserved by a bind
    // While a resize's patch is on its way: the decision it replaced, which events may still carry.
    std::optional<Allocation> resized_from;
    size_t refused = 0;  // fingerprint of the last refusal reported, 0 = none
  };
  struct Refusal {
    const char* annotation;
    std::string why;     // Signing::Check's message
    std::string action;  // what the state does instead
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, PodRecord> pods;  // by namespace/name
  };
  static constexpr size_t kShards = 64;

  Shard& ShardOf(const std::string& key) const;
  NodeState& FindOrAdd(const std::string& name);
  // Adds (sign +1) or removes (-1) a pod's charges on its node. Caller holds the pod's shard.
  void ApplyCharges(const std::string& node, const std::vector<GpuCharge>& charges, int sign);
  static void ApplyToNode(NodeState& node, const std::vector<GpuCharge>& charges, int sign);
  // The node's GPUs as `who` sees them (ReadFor); a thread's own copy when nominations apply.
  // Caller holds the node's lock.
  static std::span<const GpuSlot> ViewFor(const NodeState& node, const Claimant& who);
  void ReleaseLocked(PodRecord& record);
  // Reports the refusals of one event, unless `fingerprint` (of the refused values) is the one
  // reported last for the object (`*last`, null when there is no record to keep it in).
  void Report(const std::vector<Refusal>& refusals, size_t fingerprint, size_t* last) const;

  const DialectConfig dialects_;
  const annotations::Signing signing_;
  mutable std::array<Shard, kShards> shards_;
  mutable std::mutex events_mu_;
  mutable std::condition_variable events_cv_;
  uint64_t pod_events_ = 0;  // guarded by events_mu_
  mutable std::shared_mutex nodes_mu_;
  std::unordered_map<std::string, std::unique_ptr<NodeState>> nodes_;  // guarded by nodes_mu_
  // The node of each pod's nomination. A leaf lock: nothing else is taken while it is held.
  mutable std::mutex nominated_mu_;
  std::unordered_map<std::string, std::string> nominated_;  // guarded by nominated_mu_
};

}  // namespace tessera::scheduler
