// Preemption planning: which lower-priority pods to remove from one node so that a pod's GPUs
// fit there, and which node's plan is best. Only pods of lower priority are victims; pods already
// terminating count as gone and are no victims; a node where the pod does not fit with every
// eligible pod gone is no candidate. Pods are then reprieved, the most important first (higher
// priority, then the smaller share of this node), and smaller victim sets are searched within a
// budget of fits, so that the plan evicts the fewest pods it can find.
// Pure functions over the caller's copies: thread-safe.
//
//   std::optional<PreemptionPlan> plan = PlanOnNode(request, 1000, "node-a", gpus, pods, {}, opt);
//   if (plan && (!best || BetterPlan(*plan, *best))) best = plan;
//
// Why kube-scheduler cannot plan this, and whose rules these are: docs/scheduler.md, "Preemption".
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "scheduler/cluster_state.h"
#include "scheduler/node_fit.h"

namespace tessera::scheduler {

struct PreemptionPlan {
  std::string node;
  std::vector<PodOnNode> victims;  // the most important first
  Allocation allocation;           // where the pod's containers go once the victims are gone
  int highest_priority = 0;        // of the victims (0 when there are none)
  int64_t priority_sum = 0;
};

// The plan for `request` of a pod of `priority` on `node`, whose GPUs are `gpus` with `pods`
// holding charges on them. `required` (UIDs) are victims already (kube-scheduler's own, for what
// it checks in-tree): their charges are removed first and they stay victims. nullopt when the pod
// does not fit even with every eligible pod removed. A plan without victims means the pod fits
// once the terminating pods are gone.
std::optional<PreemptionPlan> PlanOnNode(const PodRequest& request, int priority,
                                         const std::string& node, std::span<const GpuSlot> gpus,
                                         std::span<const PodOnNode> pods,
                                         const std::set<std::string>& required, Policy gpu_policy);

// True when `a` is the better of two plans: fewer victims, then a lower highest victim priority,
// then a lower sum of victim priorities, then the node name (a stable choice).
bool BetterPlan(const PreemptionPlan& a, const PreemptionPlan& b);

}  // namespace tessera::scheduler
