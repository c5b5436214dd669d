#include "scheduler/preemption_plan.h"

#include <algorithm>
#include <tuple>

namespace tessera::scheduler {
namespace {

// Fits tried in the search for a smaller victim set than the reprieve found, per node: enough
// for every set of up to 3 victims among 20 pods.
constexpr int kSearchBudget = 1500;

uint64_t MibOf(const PodOnNode& p) {
  uint64_t mib = 0;
  for (const GpuCharge& c : p.charges) mib += c.memory_mib;
  return mib;
}

// Adds (+1) or removes (-1) a pod's charges; charges on GPUs the inventory does not list do not
// bear on a fit and are skipped.
void Apply(std::vector<GpuSlot>& gpus, const PodOnNode& pod, int sign) {
  for (const GpuCharge& c : pod.charges) {
    for (GpuSlot& g : gpus) {
      if (g.info.uuid != c.uuid) continue;
      if (sign > 0) {
        g.used_mib += c.memory_mib;
        g.used_cores += c.cores;
        g.used_slots += c.slots;
      } else {
        g.used_mib -= std::min(g.used_mib, c.memory_mib);
        g.used_cores -= std::min(g.used_cores, c.cores);
        g.used_slots -= std::min(g.used_slots, c.slots);
      }
      g.pods += sign;
      g.exclusive_pods += c.exclusive ? sign : 0;
      break;
    }
  }
}

// (highest priority, sum of priorities) of a set of victims.
std::pair<int, int64_t> Weight(std::span<const PodOnNode* const> victims) {
  int highest = 0;
  int64_t sum = 0;
  for (size_t i = 0; i < victims.size(); ++i) {
    highest = i == 0 ? victims[i]->priority : std::max(highest, victims[i]->priority);
    sum += victims[i]->priority;
  }
  return {highest, sum};
}

class Planner {
 public:
  Planner(const PodRequest& request, Policy policy, std::vector<GpuSlot> base)
      : request_(request), policy_(policy), base_(std::move(base)) {}

  bool FitsWithout(std::span<const PodOnNode* const> removed) {
    work_ = base_;
    for (const PodOnNode* p : removed) Apply(work_, *p, -1);
    ++fits_;
    return Fit(request_, work_, {.gpu_policy = policy_}, scratch_, nullptr);
  }

  // The reprieve: every eligible pod removed, then put back the most important first, kept back
  // where the pod still fits. Empty optional when it does not fit with all of them removed.
  std::optional<std::vector<const PodOnNode*>> Reprieve(std::vector<const PodOnNode*> eligible) {
    if (!FitsWithout(eligible)) return std::nullopt;
    std::sort(eligible.begin(), eligible.end(), [](const PodOnNode* a, const PodOnNode* b) {
      return std::make_tuple(-a->priority, MibOf(*a), a->pod.Key()) <
             std::make_tuple(-b->priority, MibOf(*b), b->pod.Key());
    });
    std::vector<const PodOnNode*> removed = eligible;
    for (const PodOnNode* p : eligible) {
      std::erase(removed, p);
      if (!FitsWithout(removed)) removed.push_back(p);
    }
    // Most important first, as kube-scheduler lists victims.
    std::vector<const PodOnNode*> victims;
    for (const PodOnNode* p : eligible) {
      if (std::find(removed.begin(), removed.end(), p) != removed.end()) victims.push_back(p);
    }
    return victims;
  }

  // A smaller set than `found` (within the budget), the lightest of the smallest size.
  std::vector<const PodOnNode*> Fewest(std::span<const PodOnNode* const> eligible,
                                       std::vector<const PodOnNode*> found) {
    const int n = static_cast<int>(eligible.size());
    for (int size = 1; size < static_cast<int>(found.size()) && fits_ < kSearchBudget; ++size) {
      std::vector<int> pick(size);
      for (int i = 0; i < size; ++i) pick[i] = i;
      std::optional<std::vector<const PodOnNode*>> best;
      std::vector<const PodOnNode*> set(size);
      while (fits_ < kSearchBudget) {
        for (int i = 0; i < size; ++i) set[i] = eligible[pick[i]];
        if ((!best || Weight(set) < Weight(*best)) && FitsWithout(set)) best = set;
        // Next combination of `size` indexes out of n.
        int i = size - 1;
        while (i >= 0 && pick[i] == n - size + i) --i;
        if (i < 0) break;
        ++pick[i];
        for (int j = i + 1; j < size; ++j) pick[j] = pick[j - 1] + 1;
      }
      if (best) return *best;
    }
    return found;
  }

  Allocation Place(std::span<const PodOnNode* const> removed) {
    work_ = base_;
    for (const PodOnNode* p : removed) Apply(work_, *p, -1);
    FitOutput out;
    Fit(request_, work_, {.gpu_policy = policy_, .want_allocation = true}, scratch_, &out);
    return std::move(out.allocation);
  }

 private:
  const PodRequest& request_;
  const Policy policy_;
  const std::vector<GpuSlot> base_;  // terminating and required pods removed
  std::vector<GpuSlot> work_;
  FitScratch scratch_;
  int fits_ = 0;
};

}  // namespace

std::optional<PreemptionPlan> PlanOnNode(const PodRequest& request, int priority,
                                         const std::string& node, std::span<const GpuSlot> gpus,
                                         std::span<const PodOnNode> pods,
                                         const std::set<std::string>& required, Policy gpu_policy) {
  std::vector<GpuSlot> base(gpus.begin(), gpus.end());
  std::vector<const PodOnNode*> chosen, eligible;
  for (const PodOnNode& p : pods) {
    if (p.terminating) {
      Apply(base, p, -1);
    } else if (required.count(p.pod.uid)) {
      Apply(base, p, -1);
      chosen.push_back(&p);
    } else if (p.priority < priority) {
      eligible.push_back(&p);
    }
  }
  Planner planner(request, gpu_policy, std::move(base));
  if (!planner.FitsWithout({})) {
    std::optional<std::vector<const PodOnNode*>> victims = planner.Reprieve(eligible);
    if (!victims) return std::nullopt;
    std::vector<const PodOnNode*> fewest = planner.Fewest(eligible, std::move(*victims));
    chosen.insert(chosen.end(), fewest.begin(), fewest.end());
  }
  PreemptionPlan plan;
  plan.node = node;
  plan.allocation = planner.Place(chosen);
  plan.allocation.node = node;
  std::tie(plan.highest_priority, plan.priority_sum) = Weight(chosen);
  for (const PodOnNode* p : chosen) plan.victims.push_back(*p);
  return plan;
}

bool BetterPlan(const PreemptionPlan& a, const PreemptionPlan& b) {
  return std::make_tuple(a.victims.size(), a.highest_priority, a.priority_sum, a.node) <
         std::make_tuple(b.victims.size(), b.highest_priority, b.priority_sum, b.node);
}

}  // namespace tessera::scheduler
