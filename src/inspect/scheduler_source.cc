#include "inspect/scheduler_source.h"

#include <httplib.h>

#include "annotations/allocation.h"
#include "annotations/inventory.h"
#include "common/strings.h"

namespace tessera::inspect {
namespace {

using json = nlohmann::json;

Status WrongShape(const std::string& what) {
  return InvalidArgument("the scheduler's /inspect answer is not in the expected format: " + what);
}

// "main: 1 GPU x 4096 MiB; sidecar (init): ..." from the pending pod's containers.
std::string Requests(const json& containers) {
  std::string out;
  for (const json& c : containers) {
    if (!c.is_object()) continue;
    out += (out.empty() ? "" : "; ") + c.value("name", std::string("?")) +
           (c.value("init", false) ? " (init)" : "") + ": " + c.value("request", std::string());
  }
  return out;
}

// An integer field of `object` that may be absent; WrongShape when present and not an integer.
Result<std::optional<int64_t>> OptionalInteger(const json& object, const char* key,
                                               const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return std::optional<int64_t>();
  if (!it->is_number_integer()) {
    return WrongShape(where + ": \"" + key + "\" is not an integer");
  }
  return std::optional<int64_t>(it->get<int64_t>());
}

// The "quotas" list (absent from schedulers before issue 36: the view then has none).
Status ParseQuotas(const json& doc, const std::string& ns, ClusterView& view) {
  auto list = doc.find("quotas");
  if (list == doc.end()) return Status::Ok();
  if (!list->is_array()) return WrongShape("\"quotas\" is not a list");
  view.quotas.emplace();
  for (const json& q : *list) {
    if (!q.is_object() || !q.contains("namespace") || !q["namespace"].is_string() ||
        !q.contains("name") || !q["name"].is_string()) {
      return WrongShape("a quota without a \"namespace\" or \"name\"");
    }
    QuotaView quota;
    quota.ns = q["namespace"];
    quota.limits.name = q["name"];
    const std::string where = "quota " + quota.ns + "/" + quota.limits.name;
    const json limits = q.value("limits", json::object());
    const json used = q.value("used", json::object());
    if (!limits.is_object() || !used.is_object()) {
      return WrongShape(where + ": \"limits\" or \"used\" is not an object");
    }
    ASSIGN_OR_RETURN(quota.limits.memory_bytes, OptionalInteger(limits, "memoryBytes", where));
    ASSIGN_OR_RETURN(quota.limits.cores, OptionalInteger(limits, "cores", where));
    ASSIGN_OR_RETURN(std::optional<int64_t> used_memory,
                     OptionalInteger(used, "memoryBytes", where));
    ASSIGN_OR_RETURN(std::optional<int64_t> used_cores, OptionalInteger(used, "cores", where));
    quota.used = {used_memory.value_or(0), used_cores.value_or(0)};
    if (ns.empty() || quota.ns == ns) view.quotas->push_back(std::move(quota));
  }
  return Status::Ok();
}

// "; last filter: 0/2 nodes fit: cpu-1: ...; gpu-a: ..." from a pending pod's "filter" (absent
// from schedulers before issue 35, and before the scheduler has filtered the pod).
std::string LastFilter(const json& pending) {
  auto filter = pending.find("filter");
  if (filter == pending.end() || !filter->is_object()) return "";
  const json fits = filter->value("fits", json::array());
  std::string out = "; last filter: " +
                    std::to_string((fits.is_array() ? fits.size() : 0) +
                                   filter->value("fitsLeftOut", size_t{0})) +
                    "/" + std::to_string(filter->value("nodesChecked", size_t{0})) + " nodes fit";
  const char* separator = ": ";
  for (const json& r : filter->value("reasons", json::array())) {
    if (!r.is_object()) continue;
    out += separator + r.value("node", std::string("?")) + ": " + r.value("reason", std::string());
    separator = "; ";
  }
  const size_t left_out = filter->value("reasonsLeftOut", size_t{0});
  if (left_out > 0) out += "; and " + std::to_string(left_out) + " more nodes";
  return out;
}

// The "draShares" list (absent from schedulers before issue 35).
Status ParseDraShares(const json& doc, const std::string& ns, ClusterView& view) {
  auto list = doc.find("draShares");
  if (list == doc.end()) return Status::Ok();
  if (!list->is_array()) return WrongShape("\"draShares\" is not a list");
  for (const json& d : *list) {
    if (!d.is_object() || !d.contains("claim") || !d["claim"].is_string() || !d.contains("node") ||
        !d.contains("device")) {
      return WrongShape("a DRA share without \"claim\", \"node\" or \"device\"");
    }
    const std::string claim = d["claim"];
    if (!ns.empty() && !StartsWith(claim, ns + "/")) continue;
    PodShare share{.pod = claim, .dra = true};
    for (const json& p : d.value("pods", json::array())) {
      if (p.is_string()) share.containers.push_back(p);
    }
    const bool whole = d.value("wholeMemory", false);
    if (!whole) share.memory_mib = d.value("memoryMiB", uint64_t{0});
    share.cores = d.value("cores", 0);
    view.AddDraShare(d.value("node", std::string()), d.value("device", std::string()),
                     std::move(share), whole);
  }
  for (const json& w : doc.value("warnings", json::array())) {
    if (w.is_string()) view.warnings.push_back(w);
  }
  return Status::Ok();
}

}  // namespace

Result<SchedulerSnapshot> ParseSchedulerInspect(const json& doc, const std::string& ns) {
  auto wanted = [&ns](const std::string& pod) { return ns.empty() || StartsWith(pod, ns + "/"); };
  if (!doc.is_object()) return WrongShape("not a JSON object");
  SchedulerSnapshot snap;
  for (const char* field : {"nodes", "allocations", "pending"}) {
    if (!doc.contains(field) || !doc[field].is_array()) {
      return WrongShape(std::string("\"") + field + "\" is missing or not a list");
    }
  }
  for (const json& n : doc["nodes"]) {
    if (!n.is_object() || !n.contains("name") || !n["name"].is_string()) {
      return WrongShape("a node without a \"name\"");
    }
    std::string name = n["name"];
    snap.all_nodes.push_back(name);
    std::vector<scheduler::GpuInfo> gpus;
    for (const json& g : n.value("gpus", json::array())) {
      if (!g.is_object() || !g.contains("uuid") || !g["uuid"].is_string()) {
        return WrongShape("node " + name + ": a GPU without a \"uuid\"");
      }
      scheduler::GpuInfo info;
      info.uuid = g["uuid"];
      info.index = g.value("index", 0);
      info.model = g.value("model", std::string());
      info.numa = g.value("numa", -1);
      info.healthy = g.value("healthy", true);
      info.memory_mib = g.value("memoryMiB", uint64_t{0});
      // Absent from schedulers before issue 33: the memory was not scaled.
      if (auto scaling = g.find("memoryScaling"); scaling != g.end()) {
        if (!scaling->is_number() || !(scaling->get<double>() >= annotations::kMinMemoryScaling &&
                                       scaling->get<double>() <= annotations::kMaxMemoryScaling)) {
          return WrongShape("node " + name + " GPU " + info.uuid +
                            ": \"memoryScaling\" is not a number from 1 to 10");
        }
        info.memory_scaling = scaling->get<double>();
      }
      gpus.push_back(std::move(info));
    }
    NodeView& node = snap.view.AddNode(name, gpus);
    if (n.contains("inventoryError") && n["inventoryError"].is_string()) {
      node.error = n["inventoryError"];
    }
  }
  for (const json& a : doc["allocations"]) {
    if (!a.is_object() || !a.contains("pod") || !a.contains("allocation")) {
      return WrongShape("an allocation without \"pod\" or \"allocation\"");
    }
    std::string pod = a.value("pod", std::string());
    if (!wanted(pod)) continue;
    Result<annotations::Allocation> allocation =
        annotations::ParseAllocation(a["allocation"].dump());
    if (!allocation.ok()) {
      snap.view.warnings.push_back("pod " + pod + ": " + allocation.status().message());
      continue;
    }
    if (allocation->node.empty()) allocation->node = a.value("node", std::string());
    snap.view.AddAllocation(pod, *allocation);
  }
  for (const json& p : doc["pending"]) {
    if (!p.is_object() || !p.contains("pod")) return WrongShape("a pending pod without \"pod\"");
    if (!wanted(p.value("pod", std::string()))) continue;
    snap.view.pending.push_back(
        {p.value("pod", std::string()), "waiting for a GPU; requests " +
                                            Requests(p.value("containers", json::array())) +
                                            LastFilter(p)});
  }
  RETURN_IF_ERROR(ParseDraShares(doc, ns, snap.view));
  RETURN_IF_ERROR(ParseQuotas(doc, ns, snap.view));
  return snap;
}

Result<std::string> GetFromScheduler(const std::string& base_url, const std::string& path,
                                     const SchedulerClientOptions& options) {
  std::string url = base_url;
  while (EndsWith(url, "/")) url.pop_back();
  if (!StartsWith(url, "http://") && !StartsWith(url, "https://")) {
    return InvalidArgument("--scheduler " + base_url +
                           ": give the scheduler's URL with its scheme, e.g. "
                           "http://127.0.0.1:8443 or https://tessera-scheduler:8443");
  }
  httplib::Client client(url);
  if (!client.is_valid()) return InvalidArgument("--scheduler " + base_url + ": not a valid URL");
  if (options.timeout.count() > 0) {
    auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options.timeout);
    auto micros = std::chrono::duration_cast<std::chrono::microseconds>(options.timeout - seconds);
    client.set_connection_timeout(seconds.count(), micros.count());
    client.set_read_timeout(seconds.count(), micros.count());
  }
  if (!options.ca_file.empty()) client.set_ca_cert_path(options.ca_file.c_str());
  httplib::Headers headers;
  if (!options.token.empty()) headers.emplace("Authorization", "Bearer " + options.token);
  httplib::Result res = client.Get(path, headers);
  if (!res) {
    return Unavailable("cannot reach the Tessera scheduler at " + url + " (" +
                       httplib::to_string(res.error()) +
                       "); check the URL (kubectl -n tessera-system port-forward "
                       "deploy/tessera-scheduler 8443) or leave out --scheduler to read the API "
                       "server instead");
  }
  if (res->status != 200) {
    std::string hint;
    if (res->status == 401 || res->status == 403) {
      hint =
          " (it reads a Kubernetes token of a user bound to the ClusterRole tessera-gpu-viewer: "
          "--inspect.scheduler-token-file FILE, e.g. with `kubectl create token NAME`)";
    }
    return Unavailable("the Tessera scheduler at " + url + " answered HTTP " +
                       std::to_string(res->status) + " to GET " + path + ": " + res->body + hint);
  }
  return res->body;
}

Result<SchedulerSnapshot> ReadFromScheduler(const std::string& base_url,
                                            const SchedulerClientOptions& options) {
  ASSIGN_OR_RETURN(std::string body, GetFromScheduler(base_url, "/inspect", options));
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded()) return WrongShape("the body is not JSON");
  return ParseSchedulerInspect(doc, options.ns);
}

}  // namespace tessera::inspect
