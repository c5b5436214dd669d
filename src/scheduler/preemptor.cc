#include "scheduler/preemptor.h"

#include <algorithm>

#include "log/log.h"

namespace tessera::scheduler {
namespace {

constexpr size_t kListed = 3;  // victims named in a message before "and N more"

bool Contains(std::span<const std::string> list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace

std::string VictimList(std::span<const PodOnNode> victims) {
  std::string out;
  for (size_t i = 0; i < victims.size() && i < kListed; ++i) {
    if (i) out += ", ";
    out += victims[i].pod.Key();
  }
  if (victims.size() > kListed) out += " and " + std::to_string(victims.size() - kListed) + " more";
  return out;
}

Preemptor::Preemptor(ClusterState& state, Evictor& evictor, PreemptorOptions options,
                     Metrics* metrics)
    : state_(state), evictor_(evictor), options_(options), metrics_(metrics) {
  worker_ = std::thread([this] { Work(); });
}

Preemptor::~Preemptor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

std::optional<PreemptionPlan> Preemptor::BestPlan(const PodId& pod, const PodRequest& request,
                                                  int priority,
                                                  std::span<const Candidate> candidates) {
  std::vector<std::string> nodes;
  for (const Candidate& c : candidates) nodes.push_back(c.node);
  std::unordered_map<std::string, std::vector<PodOnNode>> pods = state_.PodsOn(nodes);
  const std::string key = pod.Key();
  std::optional<PreemptionPlan> best;
  for (const Candidate& c : candidates) {
    std::vector<GpuSlot> gpus = state_.GpusFor(c.node, {key, priority});
    if (gpus.empty()) continue;
    std::set<std::string> required(c.victims.begin(), c.victims.end());
    std::optional<PreemptionPlan> plan =
        PlanOnNode(request, priority, c.node, gpus, pods[c.node], required, options_.gpu_policy);
    if (plan && (!best || BetterPlan(*plan, *best))) best = std::move(plan);
  }
  return best;
}

void Preemptor::Nominate(const PodId& pod, int priority, const PreemptionPlan& plan) {
  Status nominated = state_.Nominate(pod, plan.node, priority, ChargesOf(plan.allocation),
                                     std::chrono::steady_clock::now() + options_.nomination_ttl);
  if (!nominated.ok()) {
    log::Warn("could not hold GPUs for a preempting pod",
              {{"pod", pod.Key()}, {"node", plan.node}, {"error", nominated.message()}});
  }
  Under under{pod, plan.node, {}};
  for (const PodOnNode& v : plan.victims) under.victims.push_back(v.pod.uid);
  std::lock_guard<std::mutex> lock(mu_);
  // Forget the preemptions whose pods were bound or gone since (their nominations ended).
  std::erase_if(under_, [&](const auto& entry) { return !state_.NominatedNode(entry.second.pod); });
  under_[pod.Key()] = std::move(under);
}

std::optional<std::pair<std::string, std::string>> Preemptor::AfterNoFit(
    const PodId& pod, const PodRequest& request, std::span<const std::string> nodes) {
  if (options_.leadership && !options_.leadership->Leading()) return std::nullopt;
  std::optional<PendingPriority> priority = state_.PriorityOf(pod);
  if (!priority || !priority->may_preempt || nodes.empty()) return std::nullopt;
  const std::string key = pod.Key();
  // A preemption under way: wait for its victims instead of choosing more.
  if (std::optional<std::string> node = state_.NominatedNode(pod)) {
    std::vector<std::string> waiting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = under_.find(key);
      if (it != under_.end()) waiting = it->second.victims;
    }
    std::vector<PodOnNode> left;
    auto pods = state_.PodsOn(std::span(&*node, 1));
    for (PodOnNode& p : pods[*node]) {
      if (Contains(waiting, p.pod.uid)) left.push_back(std::move(p));
    }
    if (!left.empty()) {
      return std::make_pair(*node, "preemption under way: waiting for " +
                                       std::to_string(left.size()) + " preempted pod(s) to end (" +
                                       VictimList(left) + ")");
    }
  }
  std::vector<Candidate> candidates;
  for (const std::string& n : nodes) candidates.push_back({n, {}, 0});
  std::optional<PreemptionPlan> plan = BestPlan(pod, request, priority->priority, candidates);
  if (!plan) return std::nullopt;
  if (plan->victims.empty()) {
    // It fits once pods that are ending already are gone: nothing to evict.
    return std::make_pair(plan->node,
                          "fits once the pods ending there are gone; nothing to preempt");
  }
  Nominate(pod, priority->priority, *plan);
  const std::string message = "preempted by " + key + " (priority " +
                              std::to_string(priority->priority) + ") to free GPUs on node " +
                              plan->node;
  log::Info("preempting pods for their GPUs", {{"pod", key},
                                               {"priority", std::to_string(priority->priority)},
                                               {"node", plan->node},
                                               {"victims", VictimList(plan->victims)}});
  if (metrics_) metrics_->CountPreemption(plan->victims.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const PodOnNode& v : plan->victims) queue_.push_back({v.pod, pod, plan->node, message});
  }
  work_cv_.notify_all();
  return std::make_pair(plan->node, "preempting " + std::to_string(plan->victims.size()) +
                                        " lower-priority pod(s) to make room (" +
                                        VictimList(plan->victims) + ")");
}

std::optional<Preemptor::Candidate> Preemptor::Choose(const PodId& pod, const PodRequest& request,
                                                      int priority,
                                                      std::span<const Candidate> candidates) {
  if (std::optional<PendingPriority> known = state_.PriorityOf(pod)) priority = known->priority;
  std::optional<PreemptionPlan> plan = BestPlan(pod, request, priority, candidates);
  if (!plan) return std::nullopt;
  Nominate(pod, priority, *plan);
  // kube-scheduler's own victims stay, whether or not they hold GPUs; the plan adds those the
  // GPUs need.
  Candidate out;
  for (const Candidate& c : candidates) {
    if (c.node != plan->node) continue;
    out = c;
  }
  for (const PodOnNode& v : plan->victims) {
    if (!Contains(out.victims, v.pod.uid)) out.victims.push_back(v.pod.uid);
  }
  log::Info(
      "preemption: node chosen for kube-scheduler",
      {{"pod", pod.Key()}, {"node", out.node}, {"victims", std::to_string(out.victims.size())}});
  return out;
}

void Preemptor::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    Eviction next = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Status evicted = evictor_.Evict(next);
    if (evicted.ok()) {
      log::Info("preempted a pod",
                {{"pod", next.victim.Key()}, {"by", next.preemptor.Key()}, {"node", next.node}});
    } else {
      log::Warn(
          "could not preempt a pod",
          {{"pod", next.victim.Key()}, {"by", next.preemptor.Key()}, {"error", evicted.message()}});
    }
    lock.lock();
  }
}

}  // namespace tessera::scheduler
