#include "node/pods/kube_pod_source.h"

namespace tessera::node {

KubePodSource::KubePodSource(kube::Client& client, const std::string& node)
    : client_(client),
      node_(node),
      pods_(
          client, kube::kPods,
          {.name = "pods of node " + node,
           .selectors = {.field_selector = "spec.nodeName=" + node}},
          {.on_add = [this](const nlohmann::json& pod) { Publish(pod); },
           .on_update = [this](const nlohmann::json&, const nlohmann::json& pod) { Publish(pod); },
           .on_delete = [this](const nlohmann::json& pod) { Unpublish(pod); }}) {}

void KubePodSource::Publish(const nlohmann::json& pod) {
  auto ref = std::make_shared<const nlohmann::json>(pod);
  std::lock_guard lock(mu_);
  published_[kube::ObjectKey(pod)] = std::move(ref);
}

void KubePodSource::Unpublish(const nlohmann::json& pod) {
  std::lock_guard lock(mu_);
  published_.erase(kube::ObjectKey(pod));
}

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

std::vector<PodRef> KubePodSource::NodePods() const {
  std::lock_guard lock(mu_);
  std::vector<PodRef> out;
  out.reserve(published_.size());
  for (const auto& [key, pod] : published_) out.push_back(pod);
  return out;
}

PodRef KubePodSource::FindPod(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = published_.find(ns + "/" + name);
  return it == published_.end() ? nullptr : it->second;
}

Status KubePodSource::PatchPodAnnotations(const std::string& ns, const std::string& name,
                                          const AnnotationPatch& patch) {
  return client_.PatchAnnotations(kube::kPods, ns, name, patch).status();
}

Status KubePodSource::PatchNode(const std::string& node, const AnnotationPatch& annotations,
                                const AnnotationPatch& labels) {
  auto values = [](const AnnotationPatch& patch) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : patch) out[k] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    return out;
  };
  nlohmann::json metadata = nlohmann::json::object();
  if (!annotations.empty()) metadata["annotations"] = values(annotations);
  if (!labels.empty()) metadata["labels"] = values(labels);
  return client_.MergePatch(kube::kNodes, "", node, {{"metadata", metadata}}).status();
}

Status KubePodSource::CreatePodEvent(const std::string& ns, const std::string& name,
                                     const std::string& type, const std::string& reason,
                                     const std::string& message) {
  // The cached pod names its uid, so the event is shown with that pod and no other of its name.
  PodRef pod = FindPod(ns, name);
  nlohmann::json involved = pod ? *pod
                                : nlohmann::json{{"apiVersion", "v1"},
                                                 {"kind", "Pod"},
                                                 {"metadata", {{"name", name}, {"namespace", ns}}}};
  involved["apiVersion"] = "v1";
  involved["kind"] = "Pod";
  return client_.CreateEvent(involved, type, reason, message, "tessera-node").status();
}

}  // namespace tessera::node
