// Engine: the scheduler's decisions in typed form (filter, prioritize, bind), over a ClusterState
// and a Binder. The HTTP layer (extender.h) only translates JSON to these calls and back.
//
//   Engine engine(state, binder, {.node_policy = Policy::kBinpack}, &metrics);
//   FilterResult f = engine.Filter(pod_id, request, node_names);
//   Status s = engine.Bind(pod_id, "gpu-node-1");
//
// Filter reserves nothing. Bind decides and reserves under the node's lock (ClusterState::Reserve),
// then posts the Binding outside every lock, and releases the reservation at once if the Binding
// fails. Thread-safe: all methods may run concurrently; the state, binder and metrics must outlive
// the engine.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "log/log_limiter.h"
#include "scheduler/binder.h"
#include "scheduler/cluster_state.h"
#include "scheduler/leadership.h"
#include "scheduler/metrics.h"
#include "scheduler/request.h"

namespace tessera::scheduler {

struct EngineOptions {
  Policy node_policy = Policy::kBinpack;
  Policy gpu_policy = Policy::kBinpack;
  // Bind binds only pods of this spec.schedulerName (empty: any).
  std::string scheduler_name;
  // How long bind waits for the pod watch to show a pod it does not know yet.
  std::chrono::milliseconds watch_wait{2000};
  // Binds only while this replica leads (null: always).
  const Leadership* leadership = nullptr;
};

struct FilterResult {
  std::vector<std::string> fits;
  // Nodes that do not fit now, with the reason (the pod may fit later, or after preemption).
  std::vector<std::pair<std::string, std::string>> failed;
  // Nodes the request could never fit, even empty.
  std::vector<std::pair<std::string, std::string>> unresolvable;
};

class Engine {
 public:
  Engine(ClusterState& state, Binder& binder, EngineOptions options, Metrics* metrics);

  // Every node of `names` that fits `request` of `pod` now, and the reason for each that does not.
  // GPUs nominated for other pods of at least the pod's priority count as used
  // (ClusterState::ReadFor).
  FilterResult Filter(const PodId& pod, const PodRequest& request,
                      std::span<const std::string> names) const;

  // A score 0..10 per node of `names`, by the node policy (the pod's tessera.io/policy wins); a
  // node that does not fit scores 0.
  std::vector<std::pair<std::string, int>> Prioritize(const PodId& pod, const PodRequest& request,
                                                      std::span<const std::string> names) const;

  // Decides the GPUs of `pod` on `node` and reserves them; no API call. The request is the one
  // recorded for the pod (ClusterState::Pending). Used by Bind, and by the benchmark.
  Result<Allocation> Decide(const PodId& pod, const PodRequest& request, const std::string& node);

  // Decide, then post the Binding with the tessera.io/allocation annotation; on failure of the
  // Binding the reservation is released and the error returned. A replica that does not lead
  // refuses (Unavailable, naming the leader). Only pods the pod watch shows
  // unbound, of this scheduler, are bound (ClusterState::Bindable gives the refusals); a pod it
  // has not shown yet is waited for up to `watch_wait`. Refusals are logged, rate-limited.
  Status Bind(const PodId& pod, const std::string& node);

  const EngineOptions& options() const { return options_; }

 private:
  // How `pod` reads nodes: its own key, and its priority as its pod events gave it (0 unknown).
  Claimant ClaimantOf(const PodId& pod, std::string& key) const;

  ClusterState& state_;
  Binder& binder_;
  const EngineOptions options_;
  Metrics* metrics_;
  log::LogLimiter refusal_log_;
};

}  // namespace tessera::scheduler
