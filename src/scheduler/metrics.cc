#include "scheduler/metrics.h"

#include <cstdio>
#include <optional>
#include <utility>

#include "common/metric_labels.h"
#include "common/strings.h"

namespace tessera::scheduler {
namespace {

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

void Header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// The dialects as request.h names them, and as the metric's label says them.
constexpr std::array<std::pair<const char*, const char*>, 3> kDraDialects = {
    {{"vGPU", "vgpu"}, {"vcuda", "vcuda"}, {"gpushare", "gpushare"}}};

int DraDialectIndex(const std::string& dialect) {
  for (size_t i = 0; i < kDraDialects.size(); ++i) {
    if (dialect == kDraDialects[i].first) return static_cast<int>(i);
  }
  return -1;
}

// Each namespace's GPU quotas (one series per ResourceQuota that sets the name) and what the
// namespace uses against them. Only namespaces with a quota, so the series stay as few as the
// ResourceQuotas on Tessera's names.
void RenderQuotas(std::string& out, const std::vector<NamespaceQuotas>& quotas) {
  auto ns_label = [](const NamespaceQuotas& q) {
    return "namespace=\"" + PrometheusLabelValue(q.ns) + "\"";
  };
  struct Limit {
    const char* name;
    const char* help;
    const std::optional<int64_t> QuotaLimits::*value;
  };
  const Limit limits[] = {
      {"tessera_namespace_gpu_memory_quota_bytes",
       "GPU memory a ResourceQuota allows the namespace (requests.tessera.io/gpu-memory), in bytes",
       &QuotaLimits::memory_bytes},
      {"tessera_namespace_gpu_cores_quota_percent",
       "GPU compute a ResourceQuota allows the namespace (requests.tessera.io/gpu-cores), in "
       "percent of one GPU",
       &QuotaLimits::cores},
  };
  for (const Limit& limit : limits) {
    Header(out, limit.name, "gauge", limit.help);
    for (const NamespaceQuotas& q : quotas) {
      for (const QuotaLimits& l : q.limits) {
        if (!(l.*limit.value)) continue;
        out += std::string(limit.name) + "{" + ns_label(q) + ",resourcequota=\"" +
               PrometheusLabelValue(l.name) + "\"} " + std::to_string(*(l.*limit.value)) + "\n";
      }
    }
  }
  Header(out, "tessera_namespace_gpu_memory_used_bytes", "gauge",
         "GPU memory the namespace's pods and claims count against its quotas, in bytes");
  for (const NamespaceQuotas& q : quotas) {
    out += "tessera_namespace_gpu_memory_used_bytes{" + ns_label(q) + "} " +
           std::to_string(q.used.memory_bytes) + "\n";
  }
  Header(out, "tessera_namespace_gpu_cores_used_percent", "gauge",
         "GPU compute the namespace's pods and claims count against its quotas, in percent of "
         "one GPU");
  for (const NamespaceQuotas& q : quotas) {
    out += "tessera_namespace_gpu_cores_used_percent{" + ns_label(q) + "} " +
           std::to_string(q.used.cores) + "\n";
  }
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kBound:
      return "bound";
    case Outcome::kBindFailed:
      return "bind_failed";
    case Outcome::kNoFit:
      return "no_fit";
    case Outcome::kInvalid:
      return "invalid";
    case Outcome::kCount:
      break;
  }
  return "unknown";
}

void Histogram::Observe(std::chrono::nanoseconds d) {
  double s = std::chrono::duration<double>(d).count();
  size_t i = 0;
  while (i < kBounds.size() && s > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(d.count()), std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void Histogram::Render(std::string& out, const std::string& name, const std::string& help) const {
  Header(out, name.c_str(), "histogram", help.c_str());
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    out +=
        name + "_bucket{le=\"" + Seconds(kBounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += buckets_[kBounds.size()].load(std::memory_order_relaxed);
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += name + "_sum " + Seconds(static_cast<double>(sum_ns_.load()) / 1e9) + "\n";
  out += name + "_count " + std::to_string(count_.load()) + "\n";
}

void Metrics::CountDraRewrite(const std::string& dialect) {
  int i = DraDialectIndex(dialect);
  if (i >= 0) dra_rewrites_[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t Metrics::DraRewrites(const std::string& dialect) const {
  int i = DraDialectIndex(dialect);
  return i >= 0 ? dra_rewrites_[static_cast<size_t>(i)].load() : 0;
}

std::string Metrics::Render(const StateSnapshot& state,
                            const std::vector<NamespaceQuotas>& quotas) const {
  std::string out;
  RenderBuildInfo(out, "scheduler");
  struct Gauge {
    const char* name;
    const char* help;
    std::string (*value)(const GpuSlot&);
  };
  const Gauge gauges[] = {
      // Bytes, as Prometheus advises and as the node agent reports. "inventory", not "total":
      // the node agent's tessera_gpu_memory_total_bytes has other labels, and one name for both
      // would mix them in every sum.
      {"tessera_gpu_memory_inventory_bytes", "GPU memory in the node's inventory, in bytes",
       [](const GpuSlot& g) { return std::to_string(g.info.memory_mib << 20); }},
      {"tessera_gpu_memory_inventory_virtual_bytes",
       "GPU virtual memory (the inventory's memory x the node's device-memory-scaling) that "
       "pods are placed against, in bytes",
       [](const GpuSlot& g) { return std::to_string(g.info.virtual_memory_mib() << 20); }},
      {"tessera_gpu_memory_allocated_bytes", "GPU memory allocated to pods, in bytes",
       [](const GpuSlot& g) { return std::to_string(g.used_mib << 20); }},
      {"tessera_gpu_cores_total_percent", "GPU compute, in percent of the GPU",
       [](const GpuSlot&) { return std::string("100"); }},
      {"tessera_gpu_cores_allocated_percent", "GPU compute allocated to pods, in percent",
       [](const GpuSlot& g) { return std::to_string(g.used_cores); }},
      {"tessera_gpu_pods", "pods holding a share of the GPU",
       [](const GpuSlot& g) { return std::to_string(g.pods); }},
  };
  for (const Gauge& gauge : gauges) {
    Header(out, gauge.name, "gauge", gauge.help);
    for (const auto& [node, n] : state.nodes) {
      for (const GpuSlot& g : n.gpus) {
        out += std::string(gauge.name) + "{" +
               GpuLabels(node, g.info.index, g.info.uuid, g.info.model) + "} " + gauge.value(g) +
               "\n";
      }
    }
  }
  RenderQuotas(out, quotas);
  filter_latency.Render(out, "tessera_scheduler_filter_seconds",
                        "time to answer one extender filter call");
  prioritize_latency.Render(out, "tessera_scheduler_prioritize_seconds",
                            "time to answer one extender prioritize call");
  bind_latency.Render(out, "tessera_scheduler_bind_seconds",
                      "time to answer one extender bind call, the Binding included");
  Header(out, "tessera_scheduler_decisions_total", "counter", "scheduling decisions by outcome");
  for (int o = 0; o < static_cast<int>(Outcome::kCount); ++o) {
    out += std::string("tessera_scheduler_decisions_total{outcome=\"") +
           OutcomeName(static_cast<Outcome>(o)) + "\"} " + std::to_string(decisions_[o].load()) +
           "\n";
  }
  Header(out, "tessera_scheduler_bad_requests_total", "counter",
         "HTTP requests rejected as malformed (answered 400)");
  out += "tessera_scheduler_bad_requests_total " + std::to_string(bad_requests_.load()) + "\n";
  signing_.RenderRefused(
      out, "tessera_scheduler_unverified_annotations_total",
      {kAllocationAnnotation, kAllocationFailedAnnotation, kInventoryAnnotation});
  Header(out, "tessera_scheduler_unauthorized_requests_total", "counter",
         "extender and webhook requests refused for the client's certificate (answered 403)");
  out += "tessera_scheduler_unauthorized_requests_total " +
         std::to_string(unauthorized_requests_.load()) + "\n";
  Header(out, "tessera_scheduler_preemptions_total", "counter",
         "preemptions the scheduler started for pods' GPUs (the pods it evicts itself)");
  out += "tessera_scheduler_preemptions_total " + std::to_string(preemptions_.load()) + "\n";
  Header(out, "tessera_scheduler_preempted_pods_total", "counter",
         "pods evicted by the preemptions the scheduler started");
  out += "tessera_scheduler_preempted_pods_total " + std::to_string(preempted_pods_.load()) + "\n";
  Header(out, "tessera_scheduler_dra_rewrites_total", "counter",
         "pods the admission webhook rewrote to DRA claims, by the dialect they used");
  for (size_t i = 0; i < kDraDialects.size(); ++i) {
    out += std::string("tessera_scheduler_dra_rewrites_total{dialect=\"") + kDraDialects[i].second +
           "\"} " + std::to_string(dra_rewrites_[i].load()) + "\n";
  }
  return out;
}

}  // namespace tessera::scheduler
