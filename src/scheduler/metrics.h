// Scheduler metrics: latency histograms and decision counters, rendered by hand as Prometheus
// text together with per-GPU gauges taken from a StateSnapshot and per-namespace GPU quota gauges
// taken from the quota ledger (quota_ledger.h).
//
// Thread-safe: observations are relaxed atomic increments; Render may run concurrently.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "annotations/signing.h"
#include "scheduler/cluster_state.h"
#include "scheduler/quota.h"

namespace tessera::scheduler {

class Histogram {
 public:
  // Upper bounds in seconds, 50 us .. 5 s.
  static constexpr std::array<double, 12> kBounds = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0, 5.0};

  void Observe(std::chrono::nanoseconds d);
  // "<name>_bucket{le=..} n" lines, _sum and _count, with HELP and TYPE.
  void Render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<uint64_t> sum_ns_{0};
  std::atomic<uint64_t> count_{0};
};

enum class Outcome { kBound, kBindFailed, kNoFit, kInvalid, kCount };
const char* OutcomeName(Outcome o);  // "bound", "bind_failed", "no_fit", "invalid"

class Metrics {
 public:
  Metrics() = default;
  // Also renders the refusals of `signing` (tessera_scheduler_unverified_annotations_total).
  explicit Metrics(annotations::Signing signing) : signing_(std::move(signing)) {}

  Histogram filter_latency;
  Histogram prioritize_latency;
  Histogram bind_latency;  // decision + reservation + Binding call

  void Count(Outcome o) { decisions_[static_cast<int>(o)].fetch_add(1, std::memory_order_relaxed); }
  uint64_t Decisions(Outcome o) const { return decisions_[static_cast<int>(o)].load(); }
  void CountBadRequest() { bad_requests_.fetch_add(1, std::memory_order_relaxed); }
  void CountUnauthorized() { unauthorized_requests_.fetch_add(1, std::memory_order_relaxed); }
  // A preemption started for a pod's GPUs, with this many victims.
  void CountPreemption(size_t victims) {
    preemptions_.fetch_add(1, std::memory_order_relaxed);
    preempted_pods_.fetch_add(victims, std::memory_order_relaxed);
  }

  // A pod the admission webhook rewrote to DRA claims, once per dialect it used ("vGPU",
  // "vcuda", "gpushare"; others are not counted).
  void CountDraRewrite(const std::string& dialect);
  uint64_t DraRewrites(const std::string& dialect) const;

  // The whole exposition: per-GPU memory and cores (allocated and total) from `state`, each
  // namespace's GPU quotas and usage from `quotas` (QuotaLedger::Quotas: only namespaces with a
  // quota), the histograms and the counters.
  std::string Render(const StateSnapshot& state,
                     const std::vector<NamespaceQuotas>& quotas = {}) const;

 private:
  std::array<std::atomic<uint64_t>, static_cast<int>(Outcome::kCount)> decisions_{};
  std::atomic<uint64_t> bad_requests_{0};
  annotations::Signing signing_;
  std::atomic<uint64_t> unauthorized_requests_{0};
  std::atomic<uint64_t> preemptions_{0};
  std::atomic<uint64_t> preempted_pods_{0};
  std::array<std::atomic<uint64_t>, 3> dra_rewrites_{};  // vGPU, vcuda, gpushare
};

}  // namespace tessera::scheduler
