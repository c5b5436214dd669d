#include "scheduler/inspect.h"

#include <ctime>

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

json GpuJson(const GpuSlot& g) {
  return {{"uuid", g.info.uuid},
          {"index", g.info.index},
          {"model", g.info.model},
          {"numa", g.info.numa},
          {"healthy", g.info.healthy},
          {"memoryMiB", g.info.memory_mib},
          {"memoryScaling", g.info.memory_scaling},
          {"virtualMemoryMiB", g.info.virtual_memory_mib()},
          {"usedMiB", g.used_mib},
          {"usedCores", g.used_cores},
          {"slots", g.info.slots},
          {"usedSlots", g.used_slots},
          {"pods", g.pods},
          {"exclusive", g.exclusive_pods > 0}};
}

json QuotasJson(const std::vector<NamespaceQuotas>& quotas) {
  json out = json::array();
  for (const NamespaceQuotas& q : quotas) {
    for (const QuotaLimits& l : q.limits) {
      json limits = json::object();
      if (l.memory_bytes) limits["memoryBytes"] = *l.memory_bytes;
      if (l.cores) limits["cores"] = *l.cores;
      out.push_back({{"namespace", q.ns},
                     {"name", l.name},
                     {"limits", limits},
                     {"used", {{"memoryBytes", q.used.memory_bytes}, {"cores", q.used.cores}}}});
    }
  }
  return out;
}

// 2026-12-06T05:01:02Z
std::string Rfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

json FilterJson(const FilterRecord& r) {
  json reasons = json::array();
  for (const FilterRecord::Refusal& f : r.reasons) {
    reasons.push_back({{"node", f.node}, {"reason", f.reason}, {"unresolvable", f.unresolvable}});
  }
  return {{"time", Rfc3339(r.time)}, {"nodesChecked", r.nodes_checked},
          {"fits", r.fits},          {"fitsLeftOut", r.fits_left_out},
          {"reasons", reasons},      {"reasonsLeftOut", r.reasons_left_out}};
}

// The DRA shares, each with the UUID and memory of its GPU where the node's inventory lists it.
json DraJson(const StateSnapshot& state, const std::vector<DraShare>& shares) {
  json out = json::array();
  for (const DraShare& s : shares) {
    const GpuSlot* gpu = nullptr;
    auto node = state.nodes.find(s.node);
    if (node != state.nodes.end() && s.gpu_index) {
      for (const GpuSlot& g : node->second.gpus) {
        if (g.info.index == *s.gpu_index) gpu = &g;
      }
    }
    json share = {{"claim", s.claim},
                  {"uid", s.uid},
                  {"node", s.node},
                  {"device", s.device},
                  {"memoryMiB", s.memory_mib.value_or(gpu ? gpu->info.virtual_memory_mib() : 0)},
                  {"wholeMemory", !s.memory_mib.has_value()},
                  {"cores", s.cores},
                  {"pods", s.pods},
                  {"dra", true}};
    if (s.gpu_index) share["gpuIndex"] = *s.gpu_index;
    if (gpu) share["gpuUuid"] = gpu->info.uuid;
    out.push_back(std::move(share));
  }
  return out;
}

}  // namespace

json InspectJson(const StateSnapshot& state, const std::vector<NamespaceQuotas>& quotas,
                 const InspectExtras& extras) {
  json nodes = json::array();
  for (const auto& [name, n] : state.nodes) {
    json gpus = json::array();
    for (const GpuSlot& g : n.gpus) gpus.push_back(GpuJson(g));
    json unknown = json::array();
    for (const auto& [uuid, g] : n.orphans) unknown.push_back(GpuJson(g));
    json node = {{"name", name},
                 {"ready", n.present},
                 {"serving", n.serving},
                 {"gpus", gpus},
                 {"unknownGpus", unknown}};
    if (!n.inventory_error.empty()) node["inventoryError"] = n.inventory_error;
    nodes.push_back(std::move(node));
  }
  json allocations = json::array();
  json pending = json::array();
  for (const auto& [key, p] : state.pods) {
    if (p.allocation) {
      allocations.push_back({{"pod", key},
                             {"uid", p.uid},
                             {"node", p.node},
                             {"reserved", p.reserved},
                             {"allocation", json::parse(AllocationToJson(*p.allocation))}});
    } else if (p.pending && !p.pending->empty()) {
      json containers = json::array();
      for (const ContainerRequest& c : p.pending->containers) {
        containers.push_back({{"name", c.name}, {"init", c.init}, {"request", c.gpu.Describe()}});
      }
      json entry = {{"pod", key}, {"uid", p.uid}, {"containers", containers}};
      auto filter = extras.filters.find(key);
      if (filter != extras.filters.end() &&
          (filter->second.uid.empty() || p.uid.empty() || filter->second.uid == p.uid)) {
        entry["filter"] = FilterJson(filter->second);
      }
      pending.push_back(std::move(entry));
    }
  }
  return {{"nodes", nodes},
          {"allocations", allocations},
          {"pending", pending},
          {"quotas", QuotasJson(quotas)},
          {"draShares", DraJson(state, extras.dra.shares)},
          {"warnings", extras.dra.warnings}};
}

}  // namespace tessera::scheduler
