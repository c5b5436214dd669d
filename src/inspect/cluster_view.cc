#include "inspect/cluster_view.h"

#include <algorithm>
#include <map>

#include "common/strings.h"

namespace tessera::inspect {
namespace {

NodeView& FindOrAddNode(std::vector<NodeView>& nodes, const std::string& name) {
  for (NodeView& n : nodes) {
    if (n.name == name) return n;
  }
  nodes.push_back({name, "", {}});
  return nodes.back();
}

GpuView& FindOrAddGpu(NodeView& node, const std::string& uuid) {
  for (GpuView& g : node.gpus) {
    if (g.uuid == uuid) return g;
  }
  GpuView unknown;
  unknown.uuid = uuid;
  unknown.model = "(not in the node's inventory)";
  node.gpus.push_back(unknown);
  return node.gpus.back();
}

// The pods a share stands for.
void AddPodsOf(const PodShare& p, std::map<std::string, bool>& pods) {
  if (!p.dra) {
    pods[p.pod] = true;
    return;
  }
  for (const std::string& pod : p.containers) pods[pod] = true;
}

}  // namespace

size_t GpuView::PodCount() const {
  std::map<std::string, bool> distinct;
  for (const PodShare& p : pods) AddPodsOf(p, distinct);
  return distinct.size();
}

NodeView& ClusterView::AddNode(const std::string& name,
                               const std::vector<scheduler::GpuInfo>& inventory) {
  NodeView& node = FindOrAddNode(nodes, name);
  for (const scheduler::GpuInfo& info : inventory) {
    GpuView& g = FindOrAddGpu(node, info.uuid);
    g.index = info.index;
    g.model = info.model;
    g.numa = info.numa;
    g.healthy = info.healthy;
    g.memory_mib = info.memory_mib;
    g.memory_scaling = info.memory_scaling;
    g.virtual_memory_mib = info.virtual_memory_mib();
  }
  return node;
}

void ClusterView::AddAllocation(const std::string& pod, const scheduler::Allocation& allocation) {
  NodeView& node = FindOrAddNode(nodes, allocation.node);
  for (const scheduler::GpuCharge& charge : scheduler::ChargesOf(allocation)) {
    std::vector<std::string> containers;
    for (const scheduler::ContainerAllocation& c : allocation.containers) {
      for (const scheduler::DeviceAllocation& d : c.devices) {
        if (d.uuid != charge.uuid) continue;
        containers.push_back(c.name);
        break;
      }
    }
    GpuView& g = FindOrAddGpu(node, charge.uuid);
    g.used_mib += charge.memory_mib;
    g.used_cores += charge.cores;
    g.pods.push_back({pod, containers, charge.memory_mib, charge.cores, charge.exclusive});
  }
}

void ClusterView::AddDraShare(const std::string& node_name, const std::string& device,
                              PodShare share, bool whole_memory) {
  NodeView& node = FindOrAddNode(nodes, node_name);
  GpuView* gpu = nullptr;
  if (StartsWith(device, "gpu-")) {
    const std::string index = device.substr(4);
    for (GpuView& g : node.gpus) {
      if (g.index >= 0 && std::to_string(g.index) == index) gpu = &g;
    }
  }
  if (!gpu) gpu = &FindOrAddGpu(node, device);
  if (whole_memory) share.memory_mib = gpu->virtual_memory_mib;
  share.dra = true;
  gpu->used_mib += share.memory_mib;
  gpu->used_cores += share.cores;
  gpu->pods.push_back(std::move(share));
}

Status ClusterView::KeepOnlyNode(const std::string& name,
                                 const std::vector<std::string>& all_nodes) {
  std::vector<std::string> gpu_nodes;
  for (const NodeView& n : nodes) gpu_nodes.push_back(n.name);
  std::sort(gpu_nodes.begin(), gpu_nodes.end());
  std::string listed;
  for (const std::string& n : gpu_nodes) listed += (listed.empty() ? "" : ", ") + n;
  if (listed.empty()) listed = "none";
  auto it =
      std::find_if(nodes.begin(), nodes.end(), [&](const NodeView& n) { return n.name == name; });
  if (it != nodes.end()) {
    NodeView keep = std::move(*it);
    nodes = {std::move(keep)};
    return Status::Ok();
  }
  if (std::find(all_nodes.begin(), all_nodes.end(), name) != all_nodes.end()) {
    return FailedPrecondition("node \"" + name +
                              "\" has no tessera.io/gpus annotation: the Tessera node agent has "
                              "not published its GPUs there (is the node labelled "
                              "tessera.io/enabled=true and its tessera-node pod running?); "
                              "Tessera GPU nodes: " +
                              listed);
  }
  std::optional<std::string> best = ClosestMatch(name, all_nodes);
  return NotFound("node \"" + name + "\" not found" +
                  (best ? "; did you mean \"" + *best + "\"?" : "") +
                  " Tessera GPU nodes: " + listed);
}

void ClusterView::Finish() {
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeView& a, const NodeView& b) { return a.name < b.name; });
  for (NodeView& n : nodes) {
    // GPUs outside the inventory (index -1) go last.
    std::sort(n.gpus.begin(), n.gpus.end(), [](const GpuView& a, const GpuView& b) {
      unsigned ia = static_cast<unsigned>(a.index), ib = static_cast<unsigned>(b.index);
      return ia != ib ? ia < ib : a.uuid < b.uuid;
    });
    for (GpuView& g : n.gpus) {
      std::sort(g.pods.begin(), g.pods.end(),
                [](const PodShare& a, const PodShare& b) { return a.pod < b.pod; });
    }
  }
  std::sort(pending.begin(), pending.end(),
            [](const PendingPod& a, const PendingPod& b) { return a.pod < b.pod; });
  if (quotas) {
    std::sort(quotas->begin(), quotas->end(), [](const QuotaView& a, const QuotaView& b) {
      return a.ns != b.ns ? a.ns < b.ns : a.limits.name < b.limits.name;
    });
  }
}

Totals ClusterView::ComputeTotals() const {
  Totals t;
  std::map<std::string, bool> pods;
  for (const NodeView& n : nodes) {
    ++t.nodes;
    for (const GpuView& g : n.gpus) {
      ++t.gpus;
      t.memory_mib += g.memory_mib;
      t.virtual_memory_mib += g.virtual_memory_mib;
      t.used_mib += g.used_mib;
      t.cores += g.index >= 0 ? 100 : 0;
      t.used_cores += g.used_cores;
      for (const PodShare& p : g.pods) AddPodsOf(p, pods);
    }
  }
  t.pods = pods.size();
  return t;
}

nlohmann::json ClusterView::ToJson() const {
  using json = nlohmann::json;
  json out_nodes = json::array();
  for (const NodeView& n : nodes) {
    json gpus = json::array();
    for (const GpuView& g : n.gpus) {
      json pods = json::array();
      for (const PodShare& p : g.pods) {
        if (p.dra) {
          pods.push_back({{"claim", p.pod},
                          {"pods", p.containers},
                          {"memoryMiB", p.memory_mib},
                          {"cores", p.cores},
                          {"dra", true}});
          continue;
        }
        pods.push_back({{"pod", p.pod},
                        {"containers", p.containers},
                        {"memoryMiB", p.memory_mib},
                        {"cores", p.cores},
                        {"exclusive", p.exclusive}});
      }
      gpus.push_back({{"index", g.index},
                      {"uuid", g.uuid},
                      {"model", g.model},
                      {"numa", g.numa},
                      {"healthy", g.healthy},
                      {"memoryMiB", g.memory_mib},
                      {"memoryScaling", g.memory_scaling},
                      {"virtualMemoryMiB", g.virtual_memory_mib},
                      {"usedMiB", g.used_mib},
                      {"usedCores", g.used_cores},
                      {"pods", pods}});
    }
    json node = {{"name", n.name}, {"gpus", gpus}};
    if (!n.error.empty()) node["error"] = n.error;
    out_nodes.push_back(std::move(node));
  }
  json pending_pods = json::array();
  for (const PendingPod& p : pending)
    pending_pods.push_back({{"pod", p.pod}, {"reason", p.reason}});
  Totals t = ComputeTotals();
  json out = {{"nodes", out_nodes},
              {"pending", pending_pods},
              {"warnings", warnings},
              {"totals",
               {{"nodes", t.nodes},
                {"gpus", t.gpus},
                {"pods", t.pods},
                {"memoryMiB", t.memory_mib},
                {"virtualMemoryMiB", t.virtual_memory_mib},
                {"usedMiB", t.used_mib},
                {"cores", t.cores},
                {"usedCores", t.used_cores}}}};
  if (quotas) {
    // As the scheduler's /inspect gives them (src/scheduler/inspect.h).
    json list = json::array();
    for (const QuotaView& q : *quotas) {
      json limits = json::object();
      if (q.limits.memory_bytes) limits["memoryBytes"] = *q.limits.memory_bytes;
      if (q.limits.cores) limits["cores"] = *q.limits.cores;
      list.push_back({{"namespace", q.ns},
                      {"name", q.limits.name},
                      {"limits", limits},
                      {"used", {{"memoryBytes", q.used.memory_bytes}, {"cores", q.used.cores}}}});
    }
    out["quotas"] = std::move(list);
  }
  return out;
}

}  // namespace tessera::inspect
