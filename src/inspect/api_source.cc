#include "inspect/api_source.h"

#include <algorithm>
#include <map>

#include "annotations/allocation.h"
#include "annotations/inventory.h"
#include "inspect/dra_claims.h"
#include "kube/objects.h"
#include "scheduler/quota_ledger.h"

namespace tessera::inspect {
namespace {

using kube::Json;

bool AsksForAny(const Json& pod, const std::vector<std::string>& resources) {
  const Json& spec = pod.value("spec", Json::object());
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (const Json& c : spec[list]) {
      const Json& res = c.value("resources", Json::object());
      for (const char* kind : {"limits", "requests"}) {
        if (!res.contains(kind) || !res[kind].is_object()) continue;
        for (const std::string& r : resources) {
          if (res[kind].contains(r)) return true;
        }
      }
    }
  }
  return false;
}

std::string ConditionMessage(const Json& pod) {
  const Json& status = pod.value("status", Json::object());
  if (!status.contains("conditions") || !status["conditions"].is_array()) return "";
  for (const Json& c : status["conditions"]) {
    if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") {
      std::string message = c.value("message", "");
      return message.empty() ? c.value("reason", "") : message;
    }
  }
  return "";
}

// The newest FailedScheduling message per pod UID (events sorted by time, then resourceVersion).
std::map<std::string, std::string> FailedSchedulingMessages(const std::vector<Json>& events) {
  std::map<std::string, std::pair<std::string, std::string>> newest;  // uid -> (time, message)
  for (const Json& e : events) {
    std::string uid = kube::StringAt(e, "/involvedObject/uid");
    if (uid.empty()) continue;
    std::string time = kube::StringAt(e, "/lastTimestamp");
    if (time.empty()) time = kube::StringAt(e, "/eventTime");
    auto& slot = newest[uid];
    if (slot.second.empty() || time >= slot.first) slot = {time, e.value("message", "")};
  }
  std::map<std::string, std::string> out;
  for (const auto& [uid, tm] : newest) out[uid] = tm.second;
  return out;
}

// The node's InternalIP, "" when its status lists none.
std::string InternalIp(const Json& node) {
  const Json addresses = node.value(Json::json_pointer("/status/addresses"), Json::array());
  if (!addresses.is_array()) return "";
  for (const Json& a : addresses) {
    if (a.is_object() && a.value("type", "") == "InternalIP") return a.value("address", "");
  }
  return "";
}

// The quotas of `quotas` with what their namespaces use, counted by a QuotaLedger fed with the
// listed objects: the scheduler's count, less what its webhook admitted a moment ago.
std::vector<QuotaView> CountQuotas(const std::vector<Json>& quotas, const std::vector<Json>& nodes,
                                   const std::vector<Json>& pods, const std::vector<Json>& claims,
                                   const scheduler::DialectConfig& dialects) {
  std::vector<QuotaView> out;
  if (quotas.empty()) return out;
  scheduler::QuotaLedger ledger(dialects);
  // Nodes first: claims of allocationMode All count the most GPUs one node has.
  for (const Json& n : nodes) ledger.OnNode(scheduler::EventType::kAdded, n);
  for (const Json& q : quotas) ledger.OnQuota(scheduler::EventType::kAdded, q);
  for (const Json& p : pods) ledger.OnPod(scheduler::EventType::kAdded, p);
  for (const Json& c : claims) ledger.OnClaim(scheduler::EventType::kAdded, c);
  for (const scheduler::NamespaceQuotas& ns : ledger.Quotas()) {
    for (const scheduler::QuotaLimits& limits : ns.limits) out.push_back({ns.ns, limits, ns.used});
  }
  return out;
}

}  // namespace

Result<ApiSnapshot> ReadFromApiServer(kube::Client& client, const ApiSourceOptions& options) {
  ApiSnapshot snap;
  ASSIGN_OR_RETURN(kube::ObjectList nodes, client.List(kube::kNodes, {}));
  for (const Json& node : nodes.items) {
    std::string name = kube::NameOf(node);
    snap.all_nodes.push_back(name);
    std::string text = kube::Annotation(node, scheduler::kInventoryAnnotation);
    if (text.empty()) continue;
    Result<annotations::Inventory> inventory = annotations::ParseInventory(text);
    NodeView& view = snap.view.AddNode(
        name, inventory.ok() ? inventory->gpus : std::vector<annotations::InventoryGpu>{});
    view.address = InternalIp(node);
    if (!inventory.ok()) {
      view.error = "tessera.io/gpus cannot be read: " + inventory.status().message();
    }
  }

  // A cluster without DRA does not serve resource.k8s.io: nothing to show then.
  Result<kube::ObjectList> claims = client.List(kube::kResourceClaims, {.ns = options.ns});
  if (claims.ok()) {
    AddDraClaims(claims->items, snap.view);
  } else if (claims.status().code() != StatusCode::kNotFound) {
    snap.view.warnings.push_back("DRA shares not shown: cannot list resourceclaims: " +
                                 claims.status().message());
  }

  ASSIGN_OR_RETURN(kube::ObjectList pods, client.List(kube::kPods, {.ns = options.ns}));

  Result<kube::ObjectList> quotas = client.List(kube::kResourceQuotas, {.ns = options.ns});
  if (quotas.ok()) {
    snap.view.quotas =
        CountQuotas(quotas->items, nodes.items, pods.items,
                    claims.ok() ? claims->items : std::vector<Json>{}, options.dialects);
  } else {
    snap.view.warnings.push_back("GPU quotas not shown: cannot list resourcequotas: " +
                                 quotas.status().message());
  }
  std::vector<const Json*> waiting;
  for (const Json& pod : pods.items) {
    std::string phase = kube::PhaseOf(pod);
    if (phase == "Succeeded" || phase == "Failed") continue;
    std::string key = kube::NamespaceOf(pod) + "/" + kube::NameOf(pod);
    std::string node = kube::NodeNameOf(pod);
    if (!node.empty()) {
      std::string text = kube::Annotation(pod, scheduler::kAllocationAnnotation);
      if (text.empty() || !kube::Annotation(pod, scheduler::kAllocationFailedAnnotation).empty()) {
        continue;
      }
      Result<annotations::Allocation> allocation = annotations::ParseAllocation(text);
      if (!allocation.ok()) {
        snap.view.warnings.push_back("pod " + key + ": tessera.io/allocation cannot be read: " +
                                     allocation.status().message());
        continue;
      }
      if (allocation->node.empty()) allocation->node = node;
      snap.view.AddAllocation(key, *allocation);
      continue;
    }
    if (kube::StringAt(pod, "/spec/schedulerName") == options.scheduler_name ||
        AsksForAny(pod, options.resources)) {
      waiting.push_back(&pod);
    }
  }
  if (waiting.empty()) return snap;

  std::map<std::string, std::string> event_messages;
  bool need_events = std::any_of(waiting.begin(), waiting.end(),
                                 [](const Json* p) { return ConditionMessage(*p).empty(); });
  if (need_events) {
    ASSIGN_OR_RETURN(kube::ObjectList events,
                     client.List(kube::kEvents,
                                 {.ns = options.ns, .field_selector = "reason=FailedScheduling"}));
    event_messages = FailedSchedulingMessages(events.items);
  }
  for (const Json* pod : waiting) {
    std::string reason = ConditionMessage(*pod);
    if (reason.empty()) {
      auto it = event_messages.find(kube::UidOf(*pod));
      if (it != event_messages.end()) reason = it->second;
    }
    if (reason.empty()) reason = "not scheduled yet; no reason recorded";
    snap.view.pending.push_back({kube::NamespaceOf(*pod) + "/" + kube::NameOf(*pod), reason});
  }
  return snap;
}

}  // namespace tessera::inspect
