#include "scheduler/engine.h"

#include <chrono>

#include "log/log.h"

namespace tessera::scheduler {
namespace {

FitScratch& ThreadScratch() {
  thread_local FitScratch scratch;
  return scratch;
}

std::vector<const NodeState*>& ThreadNodes() {
  thread_local std::vector<const NodeState*> nodes;
  return nodes;
}

}  // namespace

Engine::Engine(ClusterState& state, Binder& binder, EngineOptions options, Metrics* metrics)
    : state_(state), binder_(binder), options_(options), metrics_(metrics) {}

Claimant Engine::ClaimantOf(const PodId& pod, std::string& key) const {
  key = pod.Key();
  std::optional<PendingPriority> priority = state_.PriorityOf(pod);
  return {key, priority ? priority->priority : 0};
}

FilterResult Engine::Filter(const PodId& pod, const PodRequest& request,
                            std::span<const std::string> names) const {
  FilterResult result;
  result.fits.reserve(names.size());
  FitScratch& scratch = ThreadScratch();
  FitOptions check{.gpu_policy = options_.gpu_policy};
  FitOptions explain{.gpu_policy = options_.gpu_policy, .want_reason = true};
  FitOptions ever{.gpu_policy = options_.gpu_policy, .ignore_usage = true};
  FitOutput out;
  if (request.empty()) {
    result.fits.assign(names.begin(), names.end());
    return result;
  }
  std::string key;
  const Claimant who = ClaimantOf(pod, key);
  std::vector<const NodeState*>& nodes = ThreadNodes();
  state_.FindAll(names, nodes);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const NodeState* node = nodes[i];
    if (!node) {
      result.unresolvable.emplace_back(name, "node has no Tessera GPU inventory (never seen)");
      continue;
    }
    // 0 = fits, 1 = not now, 2 = never.
    int verdict = state_.ReadFor(*node, who, [&](bool present, std::span<const GpuSlot> gpus) {
      if (!present) {
        out.reason = "node has no usable GPU inventory: " + node->inventory_error;
        return 2;
      }
      if (!node->serving) {
        out.reason = kNotServing;
        return 1;
      }
      if (Fit(request, gpus, check, scratch, nullptr)) return 0;
      Fit(request, gpus, explain, scratch, &out);
      return Fit(request, gpus, ever, scratch, nullptr) ? 1 : 2;
    });
    if (verdict == 0) {
      result.fits.push_back(name);
    } else {
      (verdict == 1 ? result.failed : result.unresolvable)
          .emplace_back(name, std::move(out.reason));
    }
  }
  return result;
}

std::vector<std::pair<std::string, int>> Engine::Prioritize(
    const PodId& pod, const PodRequest& request, std::span<const std::string> names) const {
  std::vector<std::pair<std::string, int>> scores;
  scores.reserve(names.size());
  FitScratch& scratch = ThreadScratch();
  const Policy policy = request.node_policy.value_or(options_.node_policy);
  std::string key;
  const Claimant who = ClaimantOf(pod, key);
  std::vector<const NodeState*>& nodes = ThreadNodes();
  state_.FindAll(names, nodes);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const NodeState* node = nodes[i];
    int score = 0;
    if (node) {
      score = state_.ReadFor(*node, who, [&](bool present, std::span<const GpuSlot> gpus) {
        if (!present) return 0;
        std::optional<uint64_t> charged = ChargedMib(request, gpus, options_.gpu_policy, scratch);
        return charged ? NodeScore(policy, gpus, *charged) : 0;
      });
    }
    scores.emplace_back(name, score);
  }
  return scores;
}

Result<Allocation> Engine::Decide(const PodId& pod, const PodRequest& request,
                                  const std::string& node) {
  FitOptions options{
      .gpu_policy = options_.gpu_policy, .want_allocation = true, .want_reason = true};
  return state_.Reserve(pod, node, [&](std::span<const GpuSlot> gpus) -> Result<Allocation> {
    FitOutput out;
    if (!Fit(request, gpus, options, ThreadScratch(), &out)) {
      return ResourceExhausted("pod " + pod.Key() + " does not fit node " + node + ": " +
                               out.reason);
    }
    // Containers that use no GPU are not in the request; keep the listed ones in request order.
    return std::move(out.allocation);
  });
}

Status Engine::Bind(const PodId& pod, const std::string& node) {
  auto start = std::chrono::steady_clock::now();
  auto finish = [&](Outcome outcome, Status status) {
    if (metrics_) {
      metrics_->Count(outcome);
      metrics_->bind_latency.Observe(std::chrono::steady_clock::now() - start);
    }
    return status;
  };
  if (options_.leadership && !options_.leadership->Leading()) {
    return finish(Outcome::kInvalid,
                  Unavailable("this Tessera scheduler replica does not lead, so it binds no "
                              "pod (" +
                              options_.leadership->Describe() + ")"));
  }
  auto not_seen = [](const Result<PodRequest>& r) {
    return !r.ok() && r.status().code() == StatusCode::kNotFound;
  };
  std::string watched_uid;
  Result<PodRequest> request = state_.Bindable(pod, options_.scheduler_name, &watched_uid);
  const auto wait_until = start + options_.watch_wait;
  while (not_seen(request) && std::chrono::steady_clock::now() < wait_until) {
    // kube-scheduler learnt of the pod from its own watch; ours may be a moment behind. The
    // event count is read before the look-up, so an event in between is not missed.
    uint64_t seen = state_.PodEvents();
    request = state_.Bindable(pod, options_.scheduler_name, &watched_uid);
    if (not_seen(request)) state_.WaitForPodEvent(seen, wait_until);
  }
  if (!request.ok()) {
    uint64_t dropped = 0;
    if (refusal_log_.Allow(std::chrono::steady_clock::now(), &dropped)) {
      log::Warn("bind refused", {{"pod", pod.Key()},
                                 {"uid", pod.uid},
                                 {"node", node},
                                 {"error", request.status().message()},
                                 {"suppressed", std::to_string(dropped)}});
    }
    return finish(Outcome::kInvalid, request.status());
  }
  if (request->empty()) {
    // A pod of the Tessera profile that asks for no GPU: bind it as it is.
    Status posted = binder_.Bind({pod, node, {}});
    if (!posted.ok()) {
      return finish(Outcome::kBindFailed,
                    posted.WithContext("binding pod " + pod.Key() + " to " + node));
    }
    state_.ForgetPending(pod);
    return finish(Outcome::kBound, Status::Ok());
  }
  Result<Allocation> decision = Decide(pod, *request, node);
  if (!decision.ok()) {
    log::Warn("bind decision failed",
              {{"pod", pod.Key()}, {"node", node}, {"error", decision.status().message()}});
    return finish(Outcome::kNoFit, decision.status());
  }
  // Signed for the pod's UID; one the watch showed is then required of the pod by the Binding.
  BindingRequest binding{pod, node, {}};
  if (binding.pod.uid.empty() && state_.signing().enabled()) binding.pod.uid = watched_uid;
  for (auto& [name, value] : state_.signing().Signed(kAllocationAnnotation, binding.pod.uid,
                                                     AllocationToJson(*decision))) {
    binding.annotations[name] = std::move(value);
  }
  Status posted = binder_.Bind(binding);
  if (!posted.ok()) {
    state_.CancelReservation(pod);
    log::Warn("binding failed; reservation released",
              {{"pod", pod.Key()}, {"node", node}, {"error", posted.message()}});
    return finish(Outcome::kBindFailed,
                  posted.WithContext("binding pod " + pod.Key() + " to " + node));
  }
  log::Info("bound pod", {{"pod", pod.Key()}, {"node", node}});
  return finish(Outcome::kBound, Status::Ok());
}

}  // namespace tessera::scheduler
