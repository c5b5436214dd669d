#include "scheduler/annotation_guard.h"

#include <algorithm>
#include <optional>

#include "annotations/names.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

constexpr const char* kProtected[] = {
    annotations::kAllocation,         annotations::kAllocated,
    annotations::kAllocationFailed,   annotations::kAllocationSignature,
    annotations::kAllocatedSignature, annotations::kAllocationFailedSignature,
    annotations::kGpusSignature,      annotations::kResizeStatus,
};

// The annotation's value, nullopt when the object does not carry it.
std::optional<std::string> AnnotationOf(const json* object, const char* key) {
  if (!object || !object->is_object()) return std::nullopt;
  auto metadata = object->find("metadata");
  if (metadata == object->end() || !metadata->is_object()) return std::nullopt;
  auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) return std::nullopt;
  auto value = annotations->find(key);
  if (value == annotations->end()) return std::nullopt;
  return value->is_string() ? value->get<std::string>() : value->dump();
}

}  // namespace

std::vector<std::string> DefaultTrustedUsers() {
  return {"system:serviceaccount:tessera-system:tessera-scheduler",
          "system:serviceaccount:tessera-system:tessera-node"};
}

std::string AnnotationGuard::Check(const std::string& operation, const json& object,
                                   const json* old_object, const std::string& user) const {
  if (operation == "CREATE") {
    for (const char* key : kProtected) {
      if (AnnotationOf(&object, key)) {
        return std::string("a new pod may not carry ") + key +
               ": Tessera's scheduler and node agent write it once the pod is scheduled; "
               "remove it from the pod";
      }
    }
    return "";
  }
  if (operation != "UPDATE") return "";
  if (std::find(trusted_.begin(), trusted_.end(), user) != trusted_.end()) return "";
  for (const char* key : kProtected) {
    std::optional<std::string> before = AnnotationOf(old_object, key);
    std::optional<std::string> after = AnnotationOf(&object, key);
    if (before == after) continue;
    const char* what = !before ? "set" : !after ? "remove" : "change";
    return "user \"" + user + "\" may not " + what + " " + key +
           ": only Tessera's service accounts (scheduler.webhook.trusted-users) write it";
  }
  return "";
}

}  // namespace tessera::scheduler
