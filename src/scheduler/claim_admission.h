// Claim admission: what /validate checks in a ResourceClaim's spec (and a ResourceClaimTemplate's
// spec.spec) before it is stored, so that a claim Tessera's DRA driver could not prepare is refused
// when it is written, with the reason, instead of failing at NodePrepareResources after it was
// allocated (its pod stuck in ContainerCreating, the reason only in the pod's events). The rules
// are the driver's (node/dra/claim_grant.h) as far as a spec can tell them:
//   - every opaque configuration entry of driver gpu.tessera.io is a GpuConfig
//     (annotations/gpu_config.h), and one that names requests names every request of the claim
//     whose DeviceClass is gpu.tessera.io;
//   - those requests are all for administrative access (adminAccess) or none is;
//   - with computeMode elastic, each of them (each subrequest of firstAvailable) asks for
//     capacity.requests.cores between 1 and 99.
// Requests of other DeviceClasses are not judged (a class of another name may select this driver's
// devices too: the driver still checks those at prepare, docs/dra.md). Pure; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tessera::scheduler {

// Empty when `spec` (a ResourceClaimSpec) passes; otherwise why not, and what is allowed.
std::string ClaimSpecDenial(const nlohmann::json& spec);

}  // namespace tessera::scheduler
