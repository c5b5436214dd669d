#include "scheduler/resize_admission.h"

#include "common/json_text.h"
#include "scheduler/protocol.h"
#include "scheduler/resize.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

// The annotation's value, "" when the object does not carry it.
std::string AnnotationOf(const json* object, const char* key) {
  if (!object) return "";
  const json* metadata = Member(*object, "metadata");
  const json* annotations = metadata ? Member(*metadata, "annotations") : nullptr;
  return annotations ? TextOf(*annotations, key) : "";
}

}  // namespace

std::string ResizeRequestDenial(const std::string& operation, const json& object,
                                const json* old_object) {
  const std::string request_text = AnnotationOf(&object, annotations::kResize);
  if (request_text.empty()) return "";
  if (operation == "CREATE") {
    return std::string("a new pod may not carry ") + annotations::kResize +
           ": a resize changes a running pod's share; give a new pod its size in its resources";
  }
  if (operation != "UPDATE" || request_text == AnnotationOf(old_object, annotations::kResize)) {
    return "";
  }
  Result<ResizeRequest> request = ParseResizeRequest(request_text);
  if (!request.ok()) return request.status().message();
  const json* metadata = Member(object, "metadata");
  const std::string pod = (metadata ? TextOf(*metadata, "namespace") : "") + "/" +
                          (metadata ? TextOf(*metadata, "name") : "");
  const std::string decision_text = AnnotationOf(&object, kAllocationAnnotation);
  if (decision_text.empty()) {
    return "pod " + pod + " has no Tessera decision (" + kAllocationAnnotation +
           "): only a pod the Tessera scheduler placed on GPUs can be resized; a pod of DRA "
           "claims cannot be (docs/resize.md)";
  }
  Result<Allocation> decision = ParseAllocation(decision_text);
  if (!decision.ok()) return "pod " + pod + ": " + decision.status().message();
  const ContainerAllocation* container = decision->Find(request->container);
  if (!container) {
    std::string names;
    for (const ContainerAllocation& c : decision->containers) {
      if (!c.init) names += (names.empty() ? "" : ", ") + c.name;
    }
    return std::string(annotations::kResize) + ": container \"" + request->container +
           "\" of pod " + pod + " holds no GPU (containers that do: " + names + ")";
  }
  if (container->init) {
    return std::string(annotations::kResize) + ": container \"" + request->container +
           "\" is an init container: only app containers (and sidecars) are resized";
  }
  Result<ResizeStatus> status =
      ParseResizeStatus(AnnotationOf(&object, annotations::kResizeStatus));
  if (status.ok() && status->id == request->id) {
    return std::string(annotations::kResize) + ": id \"" + request->id +
           "\" was answered already (" + annotations::kResizeStatus + "); give a new id";
  }
  return "";
}

}  // namespace tessera::scheduler
