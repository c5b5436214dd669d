// Preemptor: GPU preemption for pods that fit nowhere, from the two places kube-scheduler gives
// an extender. AfterNoFit (a filter in which no node fits) plans over the filtered nodes, holds
// the best plan's GPUs for the pod (ClusterState::Nominate) and evicts its victims through the
// Evictor on a worker thread; until they are gone, later filters of the pod report the preemption
// under way. Choose (the preempt verb) widens each of kube-scheduler's candidates by the GPU
// victims it needs, drops those where the pod would still not fit, and nominates the best plan's
// GPUs; kube-scheduler then evicts. Only pods of strictly lower priority are victims, never more
// than the plan needs, and nothing is evicted where that would not make the pod fit. A pod with
// preemptionPolicy Never preempts nothing; its priority is the one its pod events gave.
// Thread-safe.
//
//   if (auto note = preemptor.AfterNoFit(pod, request, failed_nodes)) { /* its filter reason */ }
//
// Why kube-scheduler cannot do it, and the rules: docs/scheduler.md, "Preemption".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "scheduler/cluster_state.h"
#include "scheduler/leadership.h"
#include "scheduler/metrics.h"
#include "scheduler/preemption_plan.h"

namespace tessera::scheduler {

struct Eviction {
  PodId victim;  // with its UID: a pod recreated under the name is not touched
  PodId preemptor;
  std::string node;
  std::string message;  // for the victim's condition and event
};

// Deletes a victim as kube-scheduler deletes one: a DisruptionTarget condition, then the DELETE
// (UID precondition, the pod's own grace period), and an event. Thread-safe.
class Evictor {
 public:
  virtual ~Evictor() = default;
  virtual Status Evict(const Eviction& eviction) = 0;
};

struct PreemptorOptions {
  Policy gpu_policy = Policy::kBinpack;
  // How long a nomination holds GPUs for a pod that is not bound (its victims' grace periods
  // and kube-scheduler's retry backoff fit well within it).
  std::chrono::seconds nomination_ttl{300};
  // Preempts only while this replica leads (null: always).
  const Leadership* leadership = nullptr;
};

class Preemptor {
 public:
  Preemptor(ClusterState& state, Evictor& evictor, PreemptorOptions options, Metrics* metrics);
  ~Preemptor();  // finishes the evictions already started, then stops

  // After a filter of `pod` in which none of `nodes` (those that failed only for now, not
  // forever) fits: starts a preemption or reports the one under way. Returns the node concerned
  // and a sentence for its filter reason; nullopt when preemption cannot help or may not be done.
  std::optional<std::pair<std::string, std::string>> AfterNoFit(const PodId& pod,
                                                                const PodRequest& request,
                                                                std::span<const std::string> nodes);

  struct Candidate {
    std::string node;
    std::vector<std::string> victims;  // UIDs
    int64_t pdb_violations = 0;
  };
  // The preempt verb: the best of kube-scheduler's candidates with its victims widened for the
  // GPUs (`priority` is the pod's spec.priority as kube-scheduler sent it, used only when the pod
  // events have not shown the pod); nullopt when no candidate works.
  std::optional<Candidate> Choose(const PodId& pod, const PodRequest& request, int priority,
                                  std::span<const Candidate> candidates);

 private:
  // What this preemptor started for a pod: the victims it waits for.
  struct Under {
    PodId pod;
    std::string node;
    std::vector<std::string> victims;  // UIDs
  };
  std::optional<PreemptionPlan> BestPlan(const PodId& pod, const PodRequest& request, int priority,
                                         std::span<const Candidate> candidates);
  void Nominate(const PodId& pod, int priority, const PreemptionPlan& plan);
  void Work();

  ClusterState& state_;
  Evictor& evictor_;
  const PreemptorOptions options_;
  Metrics* metrics_;

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::map<std::string, Under> under_;  // by pod key; guarded by mu_
  std::deque<Eviction> queue_;          // guarded by mu_
  bool stop_ = false;                   // guarded by mu_
  std::thread worker_;
};

// "default/a, default/b" (the first few, then "and N more").
std::string VictimList(std::span<const PodOnNode> victims);

}  // namespace tessera::scheduler
