#include "scheduler/inspect.h"

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

}  // namespace

json InspectJson(const StateSnapshot& state, const std::vector<NamespaceQuotas>& quotas) {
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
      pending.push_back({{"pod", key}, {"uid", p.uid}, {"containers", containers}});
    }
  }
  return {{"nodes", nodes},
          {"allocations", allocations},
          {"pending", pending},
          {"quotas", QuotasJson(quotas)}};
}

}  // namespace tessera::scheduler
