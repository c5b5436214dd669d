// Webhook: the admission webhook for pods (AdmissionReview admission.k8s.io/v1).
//
// Mutate (/mutate) patches pods that ask for a Tessera resource (JSONPatch): spec.schedulerName,
// a vGPU count limit of 1 where a container gives vGPU memory or cores without it, and when asked
// the nodeSelector tessera.io/gpu-node=true. In DRA mode (WebhookDra) it rewrites them to DRA
// claims instead (dra_rewrite.h; `on`: every GPU pod not labelled tessera.io/webhook=device-plugin,
// `opt-in`: those labelled tessera.io/webhook=dra; a dry run creates nothing). Validate (/validate)
// only checks, guards Tessera's annotations (annotation_guard.h), checks resize requests
// (resize_admission.h) and refuses GPU pods created with spec.nodeName; for ResourceClaims and
// ResourceClaimTemplates, it refuses what the DRA driver could not prepare (claim_admission.h).
// Both deny an invalid request with a message that says what is allowed, and pass pods labelled
// tessera.io/webhook=ignore, other kinds and DELETEs untouched. With a QuotaLedger, /validate also
// refuses a GPU pod or a ResourceClaim whose charge would take its namespace past a GPU quota, and
// /mutate a pod it would rewrite to DRA (docs/quotas.md). A review of the wrong shape is
// InvalidArgument (HTTP 400). Thread-safe.
//
//   Webhook webhook(state, "tessera", DefaultTrustedUsers(), /*gpu_node_selector=*/true);
//   ASSIGN_OR_RETURN(nlohmann::json answer, webhook.Mutate(review));
//
// Rules and why: docs/scheduler.md, "Admission webhook"; DRA mode: docs/dra.md.
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
#include "scheduler/quota_ledger.h"

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
  // `quotas` (optional, outlives the Webhook): the namespaces' GPU quotas to check.
  Webhook(const ClusterState& state, std::string scheduler_name,
          std::vector<std::string> trusted_users = DefaultTrustedUsers(),
          bool gpu_node_selector = false, WebhookDra dra = {}, QuotaLedger* quotas = nullptr);

  Result<nlohmann::json> Mutate(const nlohmann::json& review) const { return Review(review, true); }
  Result<nlohmann::json> Validate(const nlohmann::json& review) const {
    return Review(review, false);
  }

 private:
  Result<nlohmann::json> Review(const nlohmann::json& review, bool mutate) const;
  // /validate of a ResourceClaim or ResourceClaimTemplate (claim_admission.h): `out` allowed, or
  // denied with why.
  nlohmann::json ReviewClaim(const nlohmann::json& request, const nlohmann::json& object,
                             const std::string& kind, nlohmann::json out) const;
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
  QuotaLedger* const quotas_;
};

}  // namespace tessera::scheduler
