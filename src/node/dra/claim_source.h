// ClaimSource: where the DRA plugin reads ResourceClaims (the API server in production, a fake
// API server or a list in tests).
//
// KubeClaimSource is thread-safe (the kube Client is).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/client.h"

namespace tessera::node::dra {

class ClaimSource {
 public:
  virtual ~ClaimSource() = default;
  // The ResourceClaim `ns`/`name`; kNotFound when there is none.
  virtual Result<nlohmann::json> Get(const std::string& ns, const std::string& name) = 0;
};

// GET /apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>.
class KubeClaimSource : public ClaimSource {
 public:
  // `client` must outlive the source.
  explicit KubeClaimSource(kube::Client& client) : client_(client) {}
  Result<nlohmann::json> Get(const std::string& ns, const std::string& name) override {
    return client_.Get(kube::kResourceClaims, ns, name);
  }

 private:
  kube::Client& client_;
};

}  // namespace tessera::node::dra
