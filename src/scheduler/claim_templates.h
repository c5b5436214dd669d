// ClaimTemplates: where the admission webhook's DRA mode creates the ResourceClaimTemplates its
// pods name (dra_rewrite.h). The scheduler app implements it over the API server
// (KubeClaimTemplates, scheduler_app.h); tests use a fake that records and fails on demand.
// Implementations must be thread-safe: the webhook calls from every connection's thread.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::scheduler {

class ClaimTemplates {
 public:
  virtual ~ClaimTemplates() = default;
  // Creates `claim_template` (a resource.k8s.io/v1 ResourceClaimTemplate) in its
  // metadata.namespace. OK when one of its name exists there already: names say the content, so
  // it was made for an earlier pod of the same shape. Other errors are the API server's.
  virtual Status Create(const nlohmann::json& claim_template) = 0;
};

}  // namespace tessera::scheduler
