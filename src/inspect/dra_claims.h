// The GPU shares of Dynamic Resource Allocation: ResourceClaims (resource.k8s.io/v1) that
// Tessera's DRA driver gpu.tessera.io holds, read the way docs/dra.md says a claim's allocation
// means: each result of the driver names a device `gpu-<index>` of the pool named after its node,
// with the claim's consumed capacity {memory, cores}. Pure: thread-safe.
#pragma once

#include <vector>

#include "inspect/cluster_view.h"
#include "kube/objects.h"

namespace tessera::inspect {

inline constexpr char kDraDriver[] = "gpu.tessera.io";

// Adds to `view` one DRA share per result of gpu.tessera.io in the status.allocation of each of
// `claims` (as listed), with the pods of its status.reservedFor. A result without consumed
// memory holds the whole GPU's memory (the device's default); a consumed capacity that cannot be
// read is a warning of the view, and that result is left out.
void AddDraClaims(const std::vector<kube::Json>& claims, ClusterView& view);

}  // namespace tessera::inspect
