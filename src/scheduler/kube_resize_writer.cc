#include "scheduler/kube_resize_writer.h"

#include "kube/objects.h"
#include "kube/resource.h"

namespace tessera::scheduler {

Result<nlohmann::json> KubeResizeWriter::PatchPod(
    const PodId& pod, const std::map<std::string, std::string>& annotations,
    const std::string& resource_version) {
  kube::StringMapChanges changes;
  for (const auto& [name, value] : annotations) changes[name] = value;
  return client_.MergePatch(kube::kPods, pod.ns, pod.name,
                            kube::MetadataMapPatch("annotations", changes, resource_version), "",
                            {.timeout = timeout_});
}

Result<nlohmann::json> KubeResizeWriter::GetPod(const PodId& pod) {
  return client_.Get(kube::kPods, pod.ns, pod.name, {.timeout = timeout_});
}

Status KubeResizeWriter::RecordEvent(const nlohmann::json& pod, const std::string& name,
                                     const std::string& type, const std::string& reason,
                                     const std::string& message) {
  const nlohmann::json& metadata = pod.at("metadata");
  const std::string ns = metadata.value("namespace", "default");
  const std::string now = kube::Rfc3339Now(false);
  nlohmann::json event = {{"apiVersion", "v1"},
                          {"kind", "Event"},
                          {"metadata", {{"name", name}, {"namespace", ns}}},
                          {"involvedObject",
                           {{"kind", "Pod"},
                            {"apiVersion", "v1"},
                            {"namespace", ns},
                            {"name", metadata.value("name", "")},
                            {"uid", metadata.value("uid", "")},
                            {"resourceVersion", metadata.value("resourceVersion", "")}}},
                          {"type", type},
                          {"reason", reason},
                          {"message", message},
                          {"source", {{"component", "tessera-scheduler"}}},
                          {"reportingComponent", "tessera-scheduler"},
                          {"firstTimestamp", now},
                          {"lastTimestamp", now},
                          {"count", 1}};
  Result<nlohmann::json> made = client_.Create(kube::kEvents, ns, event);
  if (made.ok() || made.status().code() == StatusCode::kAlreadyExists) return Status::Ok();
  return made.status();
}

}  // namespace tessera::scheduler
