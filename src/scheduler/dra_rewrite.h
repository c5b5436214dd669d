// DRA rewriting: turns a pod's dialect requests (the one request model, request.h) into
// resource.k8s.io/v1 claims of Tessera's DRA driver (gpu.tessera.io), for the admission webhook's
// DRA mode (scheduler.webhook.dra). Each GPU container becomes one claim, made from a
// ResourceClaimTemplate named after its shape (`tessera-gpu-2x4096mi-30c`), so containers of equal
// shape share one template per namespace; the template asks for one device of the DeviceClass
// gpu.tessera.io per GPU, with the consumable capacity {memory, cores}.
// Pure functions: thread-safe.
//
//   ASSIGN_OR_RETURN(DraRewrite r, RewriteToDra(pod, request, dialects));
//   for (const nlohmann::json& t : r.templates) { /* create it in the pod's namespace */ }
//   /* answer r.patch (JSONPatch) */
//
// Requests, selectors and constraints: docs/dra.md, "Existing pod specs under DRA".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scheduler/dialect.h"
#include "scheduler/request.h"

namespace tessera::scheduler {

inline constexpr char kDraDriver[] = "gpu.tessera.io";  // also the DeviceClass's name
inline constexpr uint64_t kDraMemoryStepMiB = 256;      // the devices' memory requestPolicy step
inline constexpr char kDraManagedByLabel[] = "app.kubernetes.io/managed-by";
inline constexpr char kDraManagedByValue[] = "tessera-webhook";

// What one container's claim asks for: `count` distinct GPUs, each with `memory_mib` (a multiple
// of kDraMemoryStepMiB; 0 = the whole GPU's memory, the device's default) and `cores` percent
// (0 = no compute limit).
struct DraShape {
  int count = 1;
  uint64_t memory_mib = 0;
  int cores = 0;
  bool elastic = false;  // computeMode elastic (a GpuConfig in the claim), up to cores_limit
  int cores_limit = 0;   // elastic: the most it may use alone, 0 = the whole GPU
  std::vector<std::string> selectors;  // CEL expressions every device must meet (SelectorsOf)
  bool operator==(const DraShape&) const = default;
};

// The CEL selectors that say what `selection` says (request.h: type filters case-insensitive
// substrings of the model, UUID filters exact and case-insensitive), one per non-empty list:
//   ["a100"].exists(t, device.attributes["gpu.tessera.io"].model.lowerAscii().contains(t))
//   !(device.attributes["gpu.tessera.io"].uuid.lowerAscii() in ["gpu-1"])
std::vector<std::string> SelectorsOf(const Selection& selection);

// The shape of `gpu`, memory rounded up to the step. InvalidArgument, naming the container, for
// what a claim cannot say: memory as a percent of the GPU below 100.
Result<DraShape> DraShapeOf(const ContainerRequest& container);

// "tessera-gpu-<count>x<MiB>mi-<cores>c", "allmem" for the whole memory, "-upto<limit>" for elastic
// compute (100 without a limit), and with selectors "-<8 hex digits>" of a hash of them: a DNS
// subdomain, the same for the same shape.
std::string ClaimTemplateName(const DraShape& shape);
// The resource.k8s.io/v1 ResourceClaimTemplate of `shape` in namespace `ns`, labelled as made by
// the webhook; elastic compute as the claim's GpuConfig (node/dra/claim_grant.h).
nlohmann::json ClaimTemplateJson(const DraShape& shape, const std::string& ns);

struct DraRewrite {
  nlohmann::json patch = nlohmann::json::array();  // JSONPatch operations on the pod
  std::vector<nlohmann::json> templates;           // distinct ClaimTemplateJson()s it names
  std::vector<std::string> dialects;               // distinct dialects the pod used, in order
  std::vector<std::string> warnings;               // for the admission response
};

// The rewrite of `pod` (its `request`, not empty, as ParsePod gave it) into namespace `ns`:
// every resource of the enabled `dialects` removed from the GPU containers' limits and requests,
// a spec.resourceClaims entry `<container>-gpu` per GPU container naming its template, and that
// claim in the container's resources.claims. InvalidArgument for a pod that already has
// spec.resourceClaims (a pod asks for GPUs in one way only) and for shapes DraShapeOf refuses.
// The scheduling policy annotations (binpack/spread), preferences that kube-scheduler has no
// counterpart for, are dropped with a warning (DraRewrite::warnings).
Result<DraRewrite> RewriteToDra(const nlohmann::json& pod, const PodRequest& request,
                                const DialectConfig& dialects, const std::string& ns);

}  // namespace tessera::scheduler
