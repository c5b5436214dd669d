#include "scheduler/webhook.h"

#include <algorithm>

#include "annotations/names.h"
#include "common/strings.h"
#include "log/log.h"
#include "scheduler/claim_admission.h"
#include "scheduler/dialect.h"
#include "scheduler/dra_rewrite.h"
#include "scheduler/json_pointer.h"
#include "scheduler/quota_admission.h"
#include "scheduler/resize_admission.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

const json* Field(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string StringAt(const json& object, const char* a, const char* b) {
  const json* first = Field(object, a);
  const json* second = first ? Field(*first, b) : nullptr;
  return second && second->is_string() ? second->get<std::string>() : "";
}

// Patches that give `count` a limit of 1 in every container of `request` that takes vGPU slots
// without naming it (memory or cores alone, which mean one GPU): kubelet hands devices, and so
// the limits, only to containers that ask for the device plugin's resource, as HAMi's webhook
// adds it too.
void AddMissingCounts(const json& pod, const PodRequest& request, const std::string& count,
                      json& patch) {
  const json* spec = Field(pod, "spec");
  for (const char* list : {"initContainers", "containers"}) {
    const json* containers = spec ? Field(*spec, list) : nullptr;
    if (!containers || !containers->is_array()) continue;
    for (size_t i = 0; i < containers->size(); ++i) {
      const json& c = (*containers)[i];
      const json* name = Field(c, "name");
      bool takes_slot = name && name->is_string() &&
                        std::any_of(request.containers.begin(), request.containers.end(),
                                    [&](const ContainerRequest& r) {
                                      return r.gpu.slot && r.name == name->get<std::string>();
                                    });
      if (!takes_slot) continue;
      const json* resources = Field(c, "resources");
      const json* limits = resources ? Field(*resources, "limits") : nullptr;
      if (limits && limits->contains(count)) continue;
      // The request came from its resources, so they exist; its limits may not (requests only).
      std::string path =
          std::string("/spec/") + list + "/" + std::to_string(i) + "/resources/limits";
      if (limits) {
        patch.push_back(
            {{"op", "add"}, {"path", path + "/" + PointerToken(count)}, {"value", "1"}});
      } else {
        patch.push_back({{"op", "add"}, {"path", path}, {"value", json{{count, "1"}}}});
      }
    }
  }
}

bool DryRun(const json& request) {
  const json* dry_run = Field(request, "dryRun");
  return dry_run && dry_run->is_boolean() && dry_run->get<bool>();
}

json Response(const std::string& uid) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"response", {{"uid", uid}, {"allowed", true}}}};
}

}  // namespace

std::optional<DraMode> ParseDraMode(const std::string& text) {
  if (text == "off") return DraMode::kOff;
  if (text == "opt-in") return DraMode::kOptIn;
  if (text == "on") return DraMode::kOn;
  return std::nullopt;
}

Webhook::Webhook(const ClusterState& state, std::string scheduler_name,
                 std::vector<std::string> trusted_users, bool gpu_node_selector, WebhookDra dra,
                 QuotaLedger* quotas)
    : state_(state),
      scheduler_name_(std::move(scheduler_name)),
      guard_(std::move(trusted_users)),
      gpu_node_selector_(gpu_node_selector),
      dra_(dra),
      quotas_(quotas) {}

bool Webhook::UsesDra(const json* labels) const {
  const json* label = labels ? Field(*labels, kWebhookLabel) : nullptr;
  std::string choice = label && label->is_string() ? label->get<std::string>() : "";
  switch (dra_.mode) {
    case DraMode::kOff:
      return false;
    case DraMode::kOptIn:
      return choice == "dra";
    case DraMode::kOn:
      return choice != "device-plugin";
  }
  return false;
}

std::string Webhook::RewriteForDra(const json& pod, const PodRequest& request,
                                   const std::string& ns, bool dry_run, json& patch,
                                   json& warnings) const {
  Result<DraRewrite> rewrite = RewriteToDra(pod, request, state_.dialects(), ns);
  if (!rewrite.ok()) {
    // How such a pod keeps the device plugin's path, where nodes still serve it.
    std::string way = dra_.mode == DraMode::kOptIn
                          ? std::string("remove its label ") + kWebhookLabel + "=dra"
                          : std::string("label it ") + kWebhookLabel + "=device-plugin";
    return rewrite.status().message() + " (scheduler.webhook.dra; to keep the pod on the device " +
           "plugin's path, " + way + ")";
  }
  if (!dry_run) {
    for (const json& t : rewrite->templates) {
      if (Status created = dra_.templates->Create(t); !created.ok()) {
        log::Warn("cannot create a ResourceClaimTemplate for a pod rewritten to DRA",
                  {{"template", ns + "/" + t["metadata"]["name"].get<std::string>()},
                   {"error", created.message()}});
        return "cannot create ResourceClaimTemplate " + ns + "/" +
               t["metadata"]["name"].get<std::string>() +
               " for the pod's GPUs (DRA mode): " + created.message();
      }
    }
    if (dra_.metrics) {
      for (const std::string& d : rewrite->dialects) dra_.metrics->CountDraRewrite(d);
    }
  }
  for (json& op : rewrite->patch) patch.push_back(std::move(op));
  for (std::string& w : rewrite->warnings) warnings.push_back(std::move(w));
  return "";
}

std::string Webhook::Check(const PodRequest& request) const {
  int largest = state_.MaxGpusPerNode();
  if (largest == 0) return "";  // no inventory known yet: nothing to compare with
  for (const ContainerRequest& c : request.containers) {
    if (c.gpu.count > largest) {
      return "container \"" + c.name + "\" asks for " + std::to_string(c.gpu.count) +
             " GPUs, but the largest node has " + std::to_string(largest) + ": use at most " +
             std::to_string(largest);
    }
  }
  return "";
}

json Webhook::ReviewClaim(const json& request, const json& object, const std::string& kind,
                          json out) const {
  const json* spec = Field(object, "spec");
  if (spec && kind == "ResourceClaimTemplate") spec = Field(*spec, "spec");
  std::string why = ClaimSpecDenial(spec ? *spec : json::object());
  const json* n = Field(request, "namespace");
  std::string ns = n && n->is_string() ? n->get<std::string>() : "";
  // A template uses nothing until a claim is made from it, which comes here too.
  const json* operation = Field(request, "operation");
  if (why.empty() && quotas_ && kind == "ResourceClaim" && operation && *operation == "CREATE") {
    why = ClaimQuotaDenial(*quotas_, ns, object, !DryRun(request));
  }
  if (why.empty()) return out;
  std::string name = StringAt(object, "metadata", "name");
  if (name.empty()) name = StringAt(object, "metadata", "generateName") + "*";
  log::Info("admission denied",
            {{kind == "ResourceClaim" ? "claim" : "template", ns + "/" + name}, {"reason", why}});
  out["response"]["allowed"] = false;
  out["response"]["status"] = {
      {"code", 403},
      {"reason", "Forbidden"},
      {"message", "Tessera: " + kind + " " + ns + "/" + name + ": " + why}};
  return out;
}

Result<json> Webhook::Review(const json& review, bool mutate) const {
  if (!review.is_object()) return InvalidArgument("the request body must be an AdmissionReview");
  const json* request = Field(review, "request");
  if (!request || !request->is_object()) {
    return InvalidArgument("AdmissionReview has no \"request\" object");
  }
  const json* uid = Field(*request, "uid");
  if (!uid || !uid->is_string()) return InvalidArgument("AdmissionReview request has no \"uid\"");
  json out = Response(uid->get<std::string>());

  const json* pod = Field(*request, "object");
  std::string kind = StringAt(*request, "kind", "kind");
  const json* op = Field(*request, "operation");
  std::string operation = op && op->is_string() ? op->get<std::string>() : "";
  if (!mutate && pod && pod->is_object() && operation != "DELETE" &&
      (kind == "ResourceClaim" || kind == "ResourceClaimTemplate")) {
    return ReviewClaim(*request, *pod, kind, std::move(out));
  }
  if (!pod || (!kind.empty() && kind != "Pod") || operation == "DELETE") return out;
  if (!pod->is_object()) return InvalidArgument("AdmissionReview request.object is not an object");
  std::string name = StringAt(*pod, "metadata", "name");
  if (name.empty()) name = StringAt(*pod, "metadata", "generateName") + "*";
  auto deny = [&](const std::string& why) {
    log::Info("admission denied", {{"pod", name}, {"operation", operation}, {"reason", why}});
    out["response"]["allowed"] = false;
    out["response"]["status"] = {
        {"code", 403}, {"reason", "Forbidden"}, {"message", "Tessera: " + why}};
    return out;
  };
  if (!mutate) {
    // Before the opt-out label: the label must not open a way around the guard.
    std::string refused = guard_.Check(operation, *pod, Field(*request, "oldObject"),
                                       StringAt(*request, "userInfo", "username"));
    if (!refused.empty()) return deny(refused);
    refused = ResizeRequestDenial(operation, *pod, Field(*request, "oldObject"));
    if (!refused.empty()) return deny(refused);
  }
  if (operation != "CREATE") return out;  // a pod's resources cannot change after it is created
  const json* metadata = Field(*pod, "metadata");
  const json* labels = metadata ? Field(*metadata, "labels") : nullptr;
  const json* opt_out = labels ? Field(*labels, kWebhookLabel) : nullptr;
  if (opt_out && opt_out->is_string() && opt_out->get<std::string>() == "ignore") return out;

  Result<PodRequest> parsed = ParsePod(*pod, state_.dialects());
  if (!parsed.ok()) return deny(parsed.status().message());
  if (std::string denial = Check(*parsed); !denial.empty()) return deny(denial);
  if (std::string node = StringAt(*pod, "spec", "nodeName"); !parsed->empty() && !node.empty()) {
    return deny("a pod that asks for a GPU may not set spec.nodeName (\"" + node +
                "\"): only the Tessera scheduler can place it on GPUs; choose nodes with a "
                "nodeSelector or node affinity instead");
  }
  std::string ns = StringAt(review, "request", "namespace");
  if (ns.empty()) ns = StringAt(*pod, "metadata", "namespace");
  if (!mutate) {
    if (quotas_) {
      std::string refused =
          PodQuotaDenial(*quotas_, ns, *pod, *parsed, state_.dialects(), !DryRun(*request));
      if (!refused.empty()) return deny(refused);
    }
    // Only /validate warns: both webhooks see every pod, and one warning is enough.
    if (std::optional<std::string> why = state_.WhyNoNodeCouldFit(*parsed)) {
      out["response"]["warnings"] = json::array(
          {"Tessera: no GPU node of the cluster could hold this pod, it will stay Pending: " +
           *why});
    }
    return out;
  }
  if (parsed->empty()) return out;
  json patch = json::array();
  if (UsesDra(labels)) {
    // Its claims are counted when they are made (ReviewClaim); refused now, the user sees why at
    // once instead of in the events of a pod that waits for claims the quota refuses.
    if (quotas_) {
      std::string refused = PodQuotaDenial(*quotas_, ns, *pod, *parsed, state_.dialects(), false);
      if (!refused.empty()) return deny(refused);
    }
    json warnings = json::array();
    if (std::string denial = RewriteForDra(*pod, *parsed, ns, DryRun(*request), patch, warnings);
        !denial.empty()) {
      return deny(denial);
    }
    if (!warnings.empty()) out["response"]["warnings"] = warnings;
    out["response"]["patchType"] = "JSONPatch";
    out["response"]["patch"] = Base64Encode(patch.dump());
    return out;
  }
  if (StringAt(*pod, "spec", "schedulerName") != scheduler_name_) {
    patch.push_back({{"op", "add"}, {"path", "/spec/schedulerName"}, {"value", scheduler_name_}});
  }
  AddMissingCounts(*pod, *parsed, state_.dialects().vgpu_count, patch);
  if (gpu_node_selector_) {
    const json* spec = Field(*pod, "spec");
    const json* selector = spec ? Field(*spec, "nodeSelector") : nullptr;
    if (!selector) {
      patch.push_back({{"op", "add"},
                       {"path", "/spec/nodeSelector"},
                       {"value", {{annotations::kGpuNodeLabel, "true"}}}});
    } else if (!selector->contains(annotations::kGpuNodeLabel)) {
      patch.push_back({{"op", "add"},
                       {"path", "/spec/nodeSelector/" + PointerToken(annotations::kGpuNodeLabel)},
                       {"value", "true"}});
    }
  }
  if (patch.empty()) return out;
  out["response"]["patchType"] = "JSONPatch";
  out["response"]["patch"] = Base64Encode(patch.dump());
  return out;
}

}  // namespace tessera::scheduler
