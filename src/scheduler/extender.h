// Extender: the kube-scheduler extender protocol (filter, prioritize, bind, preempt): JSON in, the
// answer's JSON text out. With a Preemptor, a filter in which no node fits may start a GPU
// preemption (preemptor.h), and the preempt verb widens kube-scheduler's candidates.
// Keys are PascalCase (kube-scheduler's extender types have no JSON tags); embedded Pods and Nodes
// are ordinary API objects (camelCase); null is accepted wherever absence is. Filter takes
// NodeNames (nodeCacheCapable: true) or full Nodes and answers in the same form. A body of the
// wrong shape is InvalidArgument (HTTP 400); scheduling failures are answers, not errors.
// Thread-safe (delegates to Engine).
//
//   Extender extender(engine, state, metrics, &preemptor);
//   ASSIGN_OR_RETURN(std::string answer, extender.Filter(args));  // the body of POST /filter
//
// Why answers are written as text: docs/scheduler.md, "Performance".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scheduler/cluster_state.h"
#include "scheduler/engine.h"
#include "scheduler/filter_memory.h"
#include "scheduler/metrics.h"
#include "scheduler/preemptor.h"

namespace tessera::scheduler {

class Extender {
 public:
  // `preemptor` may be null: no preemption. `filters` (may be null) keeps each GPU pod's last
  // filter answer for /inspect.
  Extender(Engine& engine, ClusterState& state, Metrics& metrics, Preemptor* preemptor = nullptr,
           FilterMemory* filters = nullptr);

  // ExtenderArgs -> ExtenderFilterResult {Nodes, NodeNames, FailedNodes,
  // FailedAndUnresolvableNodes, Error}.
  Result<std::string> Filter(const nlohmann::json& args);
  // ExtenderArgs -> HostPriorityList [{Host, Score}].
  Result<std::string> Prioritize(const nlohmann::json& args);
  // ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node} -> ExtenderBindingResult {Error}.
  Result<std::string> Bind(const nlohmann::json& args);
  // ExtenderPreemptionArgs {Pod, NodeNameToMetaVictims or NodeNameToVictims} ->
  // ExtenderPreemptionResult {NodeNameToMetaVictims}: at most one node, its victims widened for the
  // pod's GPUs; none when no candidate works or preemption is off.
  Result<std::string> Preempt(const nlohmann::json& args);

 private:
  struct Args {
    PodId pod;
    Result<PodRequest> request = PodRequest{};
    std::vector<std::string> names;
    const nlohmann::json* nodes = nullptr;  // the items of a full Nodes list, else null
  };
  Result<Args> ParseArgs(const nlohmann::json& args);

  Engine& engine_;
  ClusterState& state_;
  Metrics& metrics_;
  Preemptor* preemptor_;
  FilterMemory* filters_;
};

}  // namespace tessera::scheduler
