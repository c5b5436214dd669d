#include "node/kube_pod_source.h"

namespace tessera::node {

KubePodSource::KubePodSource(kube::Client& client, const std::string& node)
    : client_(client),
      node_(node),
      pods_(client, kube::kPods,
            {.name = "pods of node " + node,
             .selectors = {.field_selector = "spec.nodeName=" + node}},
            {}) {}

Status KubePodSource::Start(std::chrono::milliseconds sync_timeout) {
  pods_.Start();
  if (!pods_.WaitForSync(sync_timeout)) {
    return Unavailable("the pods of node " + node_ + " could not be listed from the API server");
  }
  return Status::Ok();
}

void KubePodSource::Stop() {
  pods_.Stop();
}

std::vector<nlohmann::json> KubePodSource::NodePods() const {
  return pods_.List();
}

std::optional<nlohmann::json> KubePodSource::Pod(const std::string& ns,
                                                 const std::string& name) const {
  return pods_.Get(ns + "/" + name);
}

Status KubePodSource::PatchPodAnnotations(const std::string& ns, const std::string& name,
                                          const AnnotationPatch& patch) {
  return client_.PatchAnnotations(kube::kPods, ns, name, patch).status();
}

Status KubePodSource::PatchNodeAnnotations(const std::string& node, const AnnotationPatch& patch) {
  return client_.PatchAnnotations(kube::kNodes, "", node, patch).status();
}

}  // namespace tessera::node
