// Quota admission: what the admission webhook asks the QuotaLedger (quota_ledger.h) about a pod or
// a ResourceClaim being created, and how the refusal names what asked, in the object's own terms
// beside the one model's: `container "main": vcuda tencent.com/vcuda-memory: 24 = 1 GPU x 6144
// MiB`. Thread-safe as the ledger is.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "scheduler/dialect_config.h"
#include "scheduler/quota_ledger.h"
#include "scheduler/request.h"

namespace tessera::scheduler {

// Empty when `pod` (its request parsed into `request`) fits the GPU quotas of `ns`; otherwise
// why not. With `record`, an admitted pod counts as used at once (QuotaLedger::Admit).
std::string PodQuotaDenial(QuotaLedger& ledger, const std::string& ns, const nlohmann::json& pod,
                           const PodRequest& request, const DialectConfig& dialects, bool record);

// The same for a ResourceClaim (its requests of the DeviceClass gpu.tessera.io).
std::string ClaimQuotaDenial(QuotaLedger& ledger, const std::string& ns,
                             const nlohmann::json& claim, bool record);

}  // namespace tessera::scheduler
