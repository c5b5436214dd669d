// GpuConfig: the opaque parameters of driver gpu.tessera.io in a ResourceClaim's (or
// DeviceClass's) device configuration, which set a DRA claim's compute mode. The webhook writes it
// when it rewrites a pod's request into a claim; the DRA kubelet plugin reads it, and any a user
// wrote (docs/dra.md, "Claims by example").
//
//   {"apiVersion": "gpu.tessera.io/v1", "kind": "GpuConfig",
//    "computeMode": "hard" | "elastic",   (default hard)
//    "coresLimit": 1..100}                (elastic only: the most it may use alone; default 100)
//
//   nlohmann::json p = GpuConfigToJson({.mode = ComputeMode::kElastic, .cores_limit = 80});
//   Result<GpuConfig> back = ParseGpuConfig(p);  // the same
//
// Plain values and pure functions; thread-safe.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "annotations/allocation.h"
#include "common/status.h"

namespace tessera::annotations {

inline constexpr const char* kGpuConfigDriver = "gpu.tessera.io";
inline constexpr const char* kGpuConfigApiVersion = "gpu.tessera.io/v1";
inline constexpr const char* kGpuConfigKind = "GpuConfig";

struct GpuConfig {
  ComputeMode mode = ComputeMode::kHard;
  int cores_limit = 0;  // elastic: 0 = the whole GPU
  bool operator==(const GpuConfig&) const = default;
};

nlohmann::json GpuConfigToJson(const GpuConfig& config);
// Strict, since a user writes it too: another apiVersion or kind, an unknown field, a mode other
// than hard or elastic, a coresLimit that is not a whole 1..100 or is given in hard mode are
// errors saying what is allowed.
Result<GpuConfig> ParseGpuConfig(const nlohmann::json& parameters);

// The compute mode that device configuration entries give a claim's requests `requests` (base
// names): `entries` as a claim's spec.devices.config or its status.allocation.devices.config lists
// them ({"requests": [...], "opaque": {"driver", "parameters"}}; a DeviceClass's come first there).
// Entries of other drivers are skipped; a later entry of this driver replaces an earlier one whole;
// none gives hard. Errors name the entry ("config[1] ..."): a GpuConfig that does not parse, or an
// entry that names requests and leaves some of `requests` out (a claim has one mode).
Result<GpuConfig> GpuConfigOfEntries(const nlohmann::json& entries,
                                     const std::set<std::string>& requests);

}  // namespace tessera::annotations
