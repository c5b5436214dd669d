// FitDryRun: "would it fit", the answer of POST /fit. A request in any dialect (containers with
// resource names and quantities, as a pod's limits, plus the pod's selection and policy
// annotations) goes through the scheduler's own parser and the engine's filter and prioritize
// over every node the scheduler knows, then the GPU policy on the best node: the node and GPUs
// the pod would get now, and the filter's reason for each node where it would not fit. A DRA
// claim's GPU request (count, memory, cores) is fitted against each GPU's device-plugin and DRA
// shares together; kube-scheduler's allocator, not Tessera, chooses among the nodes that fit.
// Nothing is reserved, recorded or nominated. Thread-safe (const over thread-safe parts).
//
//   FitDryRun fit(engine, state, &dra_shares);
//   Result<nlohmann::json> answer =
//   fit.Answer(json::parse(R"({"resources":{"nvidia.com/gpu":"1"}})"));
//
// The JSON shapes: docs/scheduler.md, "Would it fit (POST /fit)".
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scheduler/cluster_state.h"
#include "scheduler/dra_shares.h"
#include "scheduler/engine.h"

namespace tessera::scheduler {

class FitDryRun {
 public:
  // `dra` may be null (no DRA shares known). All must outlive the dry run.
  FitDryRun(const Engine& engine, const ClusterState& state, const DraShareTable* dra);

  // The answer for a request body. InvalidArgument, saying what was wrong and what is allowed,
  // for a body of the wrong shape, an invalid request, or one that asks for no GPU.
  Result<nlohmann::json> Answer(const nlohmann::json& body) const;

 private:
  nlohmann::json ForDialects(const PodRequest& request) const;
  nlohmann::json ForClaim(const PodRequest& request) const;

  const Engine& engine_;
  const ClusterState& state_;
  const DraShareTable* dra_;
};

}  // namespace tessera::scheduler
