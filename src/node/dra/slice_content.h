// What the node's ResourceSlice (resource.k8s.io/v1) holds: one pool named after the node, one
// device `gpu-<index>` per GPU with its attributes (`memory`: the physical MiB, `memoryScaling`:
// node.device-memory-scaling) and the consumable capacities `memory` (bytes of virtual memory,
// the physical times the scaling) and `cores` (percent), shared between claims
// (allowMultipleAllocations); an unhealthy GPU with
// the taint gpu.tessera.io/unhealthy (DRADeviceTaints, on by default since Kubernetes 1.36).
// The content passes the pinned API server's validation (Kubernetes v1.36,
// pkg/apis/resource/validation/validation.go): a GPU that cannot be published validly is left out
// with a warning rather than failing the whole slice. Pure functions: thread-safe.
//
//   nlohmann::json slice = ResourceSliceObject({.node_name = node, .node_uid = uid},
//                                              SliceDevices(gpus), generation);
//
// Every field, attribute and capacity: docs/dra.md, "What each node publishes".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/gpu/gpu.h"

namespace tessera::node {

inline constexpr std::string_view kDraDriverName = "gpu.tessera.io";

// The consumable memory is handed out in steps of this many bytes (256 MiB), from one step up.
inline constexpr uint64_t kMemoryStepBytes = 256ull << 20;
// At most this many devices in one ResourceSlice (ResourceSliceMaxDevices).
inline constexpr size_t kMaxDevicesPerSlice = 128;
// String and version attribute values longer than this are refused (DeviceAttributeMaxValueLength).
inline constexpr size_t kMaxAttributeValueLength = 64;

// A dotted version as a semantic version, the form of a "version" attribute (semver 2.0: three
// numbers without leading zeros): "9.0" -> "9.0.0", "580.65.06" -> "580.65.6". Empty when
// `dotted` is not one to three dot-separated numbers.
std::string SemanticVersion(std::string_view dotted);

// The device name of the GPU with NVML index `index`: "gpu-<index>".
std::string DraDeviceName(int index);

// The ResourceSlice's name for `node_name`: "<node>-gpu.tessera.io", a DNS subdomain of at most
// 253 characters; for a node name too long for that, its first characters plus a hash of the
// whole name, so different nodes keep different names.
std::string ResourceSliceName(std::string_view node_name);

// A byte count as the API server writes a quantity back (canonical form): the largest binary
// suffix that keeps it whole ("80Gi", "143771Mi"), a plain number below 1024.
std::string BytesQuantity(uint64_t bytes);

// The taint an unhealthy GPU's device carries; its effect is node.dra.unhealthy-taint.
inline constexpr std::string_view kUnhealthyTaintKey = "gpu.tessera.io/unhealthy";
// spec.devices for these GPUs in index order, at most kMaxDevicesPerSlice; an unhealthy one
// tainted kUnhealthyTaintKey with `unhealthy_effect`. A GPU with less (virtual) memory than two
// steps (512 MiB) is left out: the memory request policy would not be valid for it. A GPU in MIG
// mode is left out too: it is no CUDA device, and the slice has no MIG devices.
nlohmann::json SliceDevices(const std::vector<GpuInfo>& gpus,
                            std::string_view unhealthy_effect = "NoSchedule");

struct SliceOwner {
  std::string node_name;
  std::string node_uid;  // the Node's metadata.uid, for the ownerReference
};

// The whole ResourceSlice object to create or to update (an update adds metadata.resourceVersion).
// `devices` as SliceDevices returns them; an empty list leaves spec.devices out, as the server
// stores it.
nlohmann::json ResourceSliceObject(const SliceOwner& owner, const nlohmann::json& devices,
                                   int64_t pool_generation);

// Whether the stored slice already says what `desired` says: every field of desired's spec and
// metadata.ownerReferences is in `stored` with the same value (fields the server adds are
// ignored), and no stored device has taints where desired's has none; pool.generation is not
// compared.
bool SliceMatches(const nlohmann::json& stored, const nlohmann::json& desired);

}  // namespace tessera::node
