#include "scheduler/binder.h"

namespace tessera::scheduler {

nlohmann::json BindingObject(const BindingRequest& request) {
  nlohmann::json metadata = {{"name", request.pod.name}, {"namespace", request.pod.ns}};
  if (!request.pod.uid.empty()) metadata["uid"] = request.pod.uid;
  if (!request.annotations.empty()) metadata["annotations"] = request.annotations;
  return {{"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata", metadata},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", request.node}}}};
}

}  // namespace tessera::scheduler
