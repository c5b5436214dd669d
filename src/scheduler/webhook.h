// Webhook: the admission webhook for pods (AdmissionReview admission.k8s.io/v1).
//
// /mutate sets spec.schedulerName (scheduler.name) on pods that ask for a Tessera resource, and a
// limit of 1 of the vGPU count resource on containers that give vGPU memory or cores without it
// (one GPU, as in HAMi: kubelet only gives devices to containers that ask for that resource), and,
// when asked, the nodeSelector tessera.io/gpu-node=true (so that kube-scheduler's own filters keep
// the pod to GPU nodes before it samples), with a JSONPatch; /validate only checks. Both deny an
// invalid request with a message that says what is allowed: the dialect rules (dialect.h), and more
// GPUs in one container than the largest known node has. Pods labelled tessera.io/webhook=ignore
// pass untouched, as do other kinds and DELETE operations. /validate also guards Tessera's
// annotations on CREATE and UPDATE (annotation_guard.h), before the opt-out label is looked at, and
// refuses a GPU pod created with spec.nodeName set. /validate adds an admission warning (kubectl
// prints it) when the request is valid but no known GPU node could ever hold it, even empty. A
// review of the wrong shape is InvalidArgument (HTTP 400).
//
// DRA mode (WebhookDra, scheduler.webhook.dra): /mutate rewrites a GPU pod to DRA claims instead
// (dra_rewrite.h): its dialect resources become a claim per GPU container, made from a
// ResourceClaimTemplate it creates in the pod's namespace (ClaimTemplates), and schedulerName,
// the vGPU count and the GPU node selector are left alone, so that kube-scheduler's DRA plugin
// places the pod and not the extender. `on` rewrites every GPU pod except those labelled
// tessera.io/webhook=device-plugin; `opt-in` only those labelled tessera.io/webhook=dra. A
// dry-run review gets the same patch and creates nothing (sideEffects: NoneOnDryRun).
// Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scheduler/annotation_guard.h"
#include "scheduler/claim_templates.h"
#include "scheduler/cluster_state.h"
#include "scheduler/metrics.h"

namespace tessera::scheduler {

// Its values: "ignore" opts out; "dra" and "device-plugin" choose the path in DRA mode.
inline constexpr char kWebhookLabel[] = "tessera.io/webhook";

enum class DraMode { kOff, kOptIn, kOn };
// "off", "opt-in", "on" (scheduler.webhook.dra); nullopt for anything else.
std::optional<DraMode> ParseDraMode(const std::string& text);

struct WebhookDra {
  DraMode mode = DraMode::kOff;
  ClaimTemplates* templates = nullptr;  // required unless mode is kOff; outlives the Webhook
  Metrics* metrics = nullptr;           // optional: counts the rewritten pods
};

class Webhook {
 public:
  // `gpu_node_selector`: /mutate also gives GPU pods the nodeSelector tessera.io/gpu-node=true.
  Webhook(const ClusterState& state, std::string scheduler_name,
          std::vector<std::string> trusted_users = DefaultTrustedUsers(),
          bool gpu_node_selector = false, WebhookDra dra = {});

  Result<nlohmann::json> Mutate(const nlohmann::json& review) const { return Review(review, true); }
  Result<nlohmann::json> Validate(const nlohmann::json& review) const {
    return Review(review, false);
  }

 private:
  Result<nlohmann::json> Review(const nlohmann::json& review, bool mutate) const;
  // Empty when the pod is acceptable; otherwise why not.
  std::string Check(const PodRequest& request) const;
  // Whether a GPU pod with these labels (null: none) goes to DRA.
  bool UsesDra(const nlohmann::json* labels) const;
  // Adds the DRA rewrite of `pod` in `ns` to `patch`, and what it dropped to `warnings` (a JSON
  // array), and unless `dry_run` creates its claim templates. Empty when done; otherwise why the
  // pod is refused.
  std::string RewriteForDra(const nlohmann::json& pod, const PodRequest& request,
                            const std::string& ns, bool dry_run, nlohmann::json& patch,
                            nlohmann::json& warnings) const;

  const ClusterState& state_;
  const std::string scheduler_name_;
  const AnnotationGuard guard_;
  const bool gpu_node_selector_;
  const WebhookDra dra_;
};

}  // namespace tessera::scheduler
