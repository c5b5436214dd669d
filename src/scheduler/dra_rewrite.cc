#include "scheduler/dra_rewrite.h"

#include <algorithm>
#include <cstdio>

#include "annotations/gpu_config.h"
#include "common/json_text.h"
#include "common/strings.h"
#include "scheduler/json_pointer.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxDnsLabel = 63;
constexpr char kClaimSuffix[] = "-gpu";

std::string ContainerWord(const ContainerRequest& c) {
  return std::string(c.init ? "init container \"" : "container \"") + c.name + "\"";
}

// A CEL list of string literals, each lowercased: JSON's string escapes are all CEL's too.
std::string CelList(const std::vector<std::string>& items) {
  json list = json::array();
  for (const std::string& i : items) list.push_back(ToLower(i));
  return list.dump();
}

}  // namespace

std::vector<std::string> SelectorsOf(const Selection& selection) {
  const std::string device = std::string("device.attributes[\"") + kDraDriver + "\"]";
  const std::string model = device + ".model.lowerAscii()";
  const std::string uuid = device + ".uuid.lowerAscii()";
  std::vector<std::string> out;
  if (!selection.use_types.empty()) {
    out.push_back(CelList(selection.use_types) + ".exists(t, " + model + ".contains(t))");
  }
  if (!selection.nouse_types.empty()) {
    out.push_back("!" + CelList(selection.nouse_types) + ".exists(t, " + model + ".contains(t))");
  }
  if (!selection.use_uuids.empty()) out.push_back(uuid + " in " + CelList(selection.use_uuids));
  if (!selection.nouse_uuids.empty()) {
    out.push_back("!(" + uuid + " in " + CelList(selection.nouse_uuids) + ")");
  }
  return out;
}

Result<DraShape> DraShapeOf(const ContainerRequest& container) {
  const GpuRequest& gpu = container.gpu;
  if (gpu.memory_mib == 0 && gpu.memory_percent != 100) {
    return InvalidArgument(ContainerWord(container) + ": memory as " +
                           std::to_string(gpu.memory_percent) +
                           "% of each GPU cannot be said in a DRA claim, which asks for memory "
                           "in bytes before it knows the GPU: give the memory in MiB instead");
  }
  DraShape shape;
  // Elastic without a share to guarantee is no limit at all, as on the extender's path.
  shape.elastic = gpu.mode == ComputeMode::kElastic && gpu.cores > 0 && gpu.cores < 100;
  if (shape.elastic && gpu.cores_limit > 0 && gpu.cores_limit < 100) {
    shape.cores_limit = gpu.cores_limit;
  }
  shape.count = gpu.count;
  shape.memory_mib =
      (gpu.memory_mib + kDraMemoryStepMiB - 1) / kDraMemoryStepMiB * kDraMemoryStepMiB;
  shape.cores = gpu.cores;
  return shape;
}

std::string ClaimTemplateName(const DraShape& shape) {
  std::string name = "tessera-gpu-" + std::to_string(shape.count) + "x" +
                     (shape.memory_mib > 0 ? std::to_string(shape.memory_mib) + "mi" : "allmem") +
                     "-" + std::to_string(shape.cores) + "c";
  if (shape.elastic) name += "-upto" + std::to_string(shape.cores_limit ? shape.cores_limit : 100);
  if (!shape.selectors.empty()) {
    std::string joined;
    for (const std::string& s : shape.selectors) joined += s + '\n';
    char hash[17];
    std::snprintf(hash, sizeof(hash), "%08llx",
                  static_cast<unsigned long long>(Fnv1a(joined) & 0xffffffffull));
    name += "-" + std::string(hash);
  }
  return name;
}

json ClaimTemplateJson(const DraShape& shape, const std::string& ns) {
  json capacity = {{"cores", std::to_string(shape.cores)}};
  // Without a memory request the device's default applies: the whole GPU's memory.
  if (shape.memory_mib > 0) capacity["memory"] = std::to_string(shape.memory_mib) + "Mi";
  json selectors = json::array();
  for (const std::string& s : shape.selectors) selectors.push_back({{"cel", {{"expression", s}}}});
  json requests = json::array();
  for (int i = 0; i < shape.count; ++i) {
    json exactly = {{"deviceClassName", kDraDriver},
                    {"allocationMode", "ExactCount"},
                    {"count", 1},
                    {"capacity", {{"requests", capacity}}}};
    if (!selectors.empty()) exactly["selectors"] = selectors;
    requests.push_back({{"name", "gpu-" + std::to_string(i)}, {"exactly", exactly}});
  }
  json devices = {{"requests", requests}};
  if (shape.elastic) {
    json parameters = annotations::GpuConfigToJson(
        {.mode = annotations::ComputeMode::kElastic, .cores_limit = shape.cores_limit});
    devices["config"] =
        json::array({{{"opaque", {{"driver", kDraDriver}, {"parameters", parameters}}}}});
  }
  // Devices allow several allocations, so without it two requests could share one GPU.
  if (shape.count > 1) {
    devices["constraints"] =
        json::array({{{"distinctAttribute", std::string(kDraDriver) + "/uuid"}}});
  }
  json labels = {{kDraManagedByLabel, kDraManagedByValue}};
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", {{"name", ClaimTemplateName(shape)}, {"namespace", ns}, {"labels", labels}}},
          {"spec", {{"metadata", {{"labels", labels}}}, {"spec", {{"devices", devices}}}}}};
}

Result<DraRewrite> RewriteToDra(const json& pod, const PodRequest& request,
                                const DialectConfig& dialects, const std::string& ns) {
  const json* spec = Member(pod, "spec");
  if (!spec) return InvalidArgument("pod has no spec object");
  if (const json* claims = Member(*spec, "resourceClaims"); claims && !claims->empty()) {
    return InvalidArgument(
        "the pod asks for GPUs through both Tessera's resources and spec.resourceClaims: under "
        "DRA the webhook turns the resources into claims itself; use one or the other");
  }
  DraRewrite out;
  if (request.node_policy || request.gpu_policy) {
    out.warnings.push_back(std::string("Tessera: the scheduling policy annotations (") +
                           kPolicyAnnotation + ", " + kHamiNodePolicyAnnotation + ", " +
                           kHamiGpuPolicyAnnotation +
                           ") are ignored under DRA, where kube-scheduler places the pod's claims");
  }
  const std::vector<std::string> selectors = SelectorsOf(request.selection);
  json pod_claims = json::array();
  const std::vector<std::string> names = dialects.ResourceNames();
  for (const char* list : {"initContainers", "containers"}) {
    const json* containers = Member(*spec, list);
    if (!containers || !containers->is_array()) continue;
    for (size_t i = 0; i < containers->size(); ++i) {
      const json& c = (*containers)[i];
      const json* name = Member(c, "name");
      if (!name || !name->is_string()) continue;
      auto it = std::find_if(request.containers.begin(), request.containers.end(),
                             [&](const ContainerRequest& r) { return r.name == *name; });
      if (it == request.containers.end()) continue;
      ASSIGN_OR_RETURN(DraShape shape, DraShapeOf(*it));
      shape.selectors = selectors;
      std::string claim = it->name + kClaimSuffix;
      if (claim.size() > kMaxDnsLabel) {
        return InvalidArgument(ContainerWord(*it) + ": its claim \"" + claim + "\" would be " +
                               std::to_string(claim.size()) + " characters, over the " +
                               std::to_string(kMaxDnsLabel) + " of a DNS label: shorten the name");
      }
      std::string path = std::string("/spec/") + list + "/" + std::to_string(i) + "/resources";
      const json& resources = c.at("resources");  // the request came from them
      for (const char* kind : {"limits", "requests"}) {
        const json* values = Member(resources, kind);
        for (const std::string& n : names) {
          if (values && values->contains(n)) {
            out.patch.push_back(
                {{"op", "remove"}, {"path", path + "/" + kind + "/" + PointerToken(n)}});
          }
        }
      }
      out.patch.push_back(
          {{"op", "add"}, {"path", path + "/claims"}, {"value", json::array({{{"name", claim}}})}});
      pod_claims.push_back(
          {{"name", claim}, {"resourceClaimTemplateName", ClaimTemplateName(shape)}});
      json tmpl = ClaimTemplateJson(shape, ns);
      if (std::find(out.templates.begin(), out.templates.end(), tmpl) == out.templates.end()) {
        out.templates.push_back(std::move(tmpl));
      }
      if (std::find(out.dialects.begin(), out.dialects.end(), it->gpu.dialect) ==
          out.dialects.end()) {
        out.dialects.push_back(it->gpu.dialect);
      }
    }
  }
  out.patch.push_back({{"op", "add"}, {"path", "/spec/resourceClaims"}, {"value", pod_claims}});
  return out;
}

}  // namespace tessera::scheduler
