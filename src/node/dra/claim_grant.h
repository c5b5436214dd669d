// ClaimGrant: what one allocated ResourceClaim gives on this node, read from its
// status.allocation (resource.k8s.io/v1) for the driver gpu.tessera.io. Each result names a
// device `gpu-<index>` of the node's pool: that GPU, with memory limit consumedCapacity.memory and
// compute consumedCapacity.cores (0 = no compute limit); a result without consumedCapacity (an
// exclusive allocation) gets the whole GPU, and two results on one GPU add up. The compute mode
// comes from the claim's opaque GpuConfig for this driver (annotations/gpu_config.h), one mode for
// the whole claim. One claim = one set of limits, shared by every container that uses the claim.
// A claim whose results were all allocated for administrative access (`adminAccess`: monitoring
// and management pods, which kube-scheduler lets onto GPUs that tenants hold) gets its GPUs with
// no limits: the driver gives such a container the device nodes alone, without the library.
// Plain values and pure functions; thread-compatible.
//
//   ASSIGN_OR_RETURN(ClaimGrant g, GrantOfClaim(claim, ref, node_name, board.Get().gpus));
//
// Refusals and which config applies: docs/dra.md, "Prepare and unprepare", "Claims by example".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "node/allocation/allocation_files.h"
#include "node/allocation/grant.h"
#include "node/gpu/gpu.h"

namespace tessera::node::dra {

inline constexpr const char* kDriverName = "gpu.tessera.io";

// A claim as kubelet names it.
struct ClaimRef {
  std::string ns, name, uid;
  std::string ToString() const { return ns + "/" + name + " (uid " + uid + ")"; }
  bool operator==(const ClaimRef&) const = default;
};

// One allocated device as kubelet's NodePrepareResources answer lists it.
struct PreparedDevice {
  std::vector<std::string> requests;
  std::string pool, device;
  std::optional<std::string> share_id;
  bool operator==(const PreparedDevice&) const = default;
};

struct ClaimGrant {
  Grant grant;  // GPUs in the order of the claim's results
  std::vector<PreparedDevice> devices;
  bool admin_access = false;  // every result has adminAccess: no limits, no library
  bool operator==(const ClaimGrant&) const = default;
};

// "gpu-<index>".
std::string DeviceName(int gpu_index);

// The grant of `claim` (a ResourceClaim object) for `ref` on the node whose pool is `pool` and
// whose GPUs are `gpus`. Errors name the claim and say what is wrong: FailedPrecondition for a
// claim of another UID, one that is not allocated or has no result of this driver, a result in
// another pool, an unhealthy GPU (admin access excepted: a monitor may watch one), a GPU in MIG
// mode (no CUDA device; the slice publishes none), results with and without adminAccess in one
// claim; NotFound for a device this node does not have;
// InvalidArgument for a malformed consumedCapacity or one larger than the GPU, and for a GpuConfig
// that is not one (unknown fields or values, a mode for some requests only, elastic without
// cores).
Result<ClaimGrant> GrantOfClaim(const nlohmann::json& claim, const ClaimRef& ref,
                                const std::string& pool, const std::vector<GpuInfo>& gpus);

}  // namespace tessera::node::dra
