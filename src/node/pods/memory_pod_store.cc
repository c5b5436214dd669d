#include "node/pods/memory_pod_store.h"

namespace tessera::node {

using nlohmann::json;

void MemoryPodStore::Put(json pod) {
  std::string key =
      pod["metadata"].value("namespace", "default") + "/" + pod["metadata"].value("name", "");
  auto ref = std::make_shared<const json>(std::move(pod));
  std::lock_guard lock(mu_);
  pods_[key] = std::move(ref);
}

void MemoryPodStore::Remove(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  pods_.erase(ns + "/" + name);
}

std::map<std::string, std::string> MemoryPodStore::NodeLabels() const {
  std::lock_guard lock(mu_);
  return node_labels_;
}

std::map<std::string, std::string> MemoryPodStore::NodeAnnotations() const {
  std::lock_guard lock(mu_);
  return node_annotations_;
}

void MemoryPodStore::FailWrites(Status status) {
  std::lock_guard lock(mu_);
  fail_ = std::move(status);
}

std::vector<PodRef> MemoryPodStore::NodePods() const {
  std::lock_guard lock(mu_);
  std::vector<PodRef> out;
  for (const auto& [key, pod] : pods_) {
    auto spec = pod->find("spec");
    if (spec == pod->end() || !spec->is_object()) continue;
    auto node = spec->find("nodeName");
    if (node != spec->end() && node->is_string() && node->get_ref<const std::string&>() == node_) {
      out.push_back(pod);
    }
  }
  return out;
}

PodRef MemoryPodStore::FindPod(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(ns + "/" + name);
  return it == pods_.end() ? nullptr : it->second;
}

Status MemoryPodStore::PatchPodAnnotations(const std::string& ns, const std::string& name,
                                           const AnnotationPatch& patch) {
  std::lock_guard lock(mu_);
  if (!fail_.ok()) return fail_;
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return NotFound("pod " + ns + "/" + name + " not found");
  auto pod = std::make_shared<json>(*it->second);
  json& annotations = (*pod)["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  for (const auto& [k, v] : patch) {
    if (v) {
      annotations[k] = *v;
    } else {
      annotations.erase(k);
    }
  }
  it->second = std::move(pod);
  return Status::Ok();
}

Status MemoryPodStore::PatchNode(const std::string& node, const AnnotationPatch& annotations,
                                 const AnnotationPatch& labels) {
  std::lock_guard lock(mu_);
  if (!fail_.ok()) return fail_;
  if (node != node_) return NotFound("node " + node + " not found");
  for (auto [patch, into] :
       {std::pair{&annotations, &node_annotations_}, {&labels, &node_labels_}}) {
    for (const auto& [k, v] : *patch) {
      if (v) {
        (*into)[k] = *v;
      } else {
        into->erase(k);
      }
    }
  }
  return Status::Ok();
}

Status MemoryPodStore::CreatePodEvent(const std::string& ns, const std::string& name,
                                      const std::string& type, const std::string& reason,
                                      const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!fail_.ok()) return fail_;
  events_.push_back(ns + "/" + name + " " + type + " " + reason + ": " + message);
  return Status::Ok();
}

std::vector<std::string> MemoryPodStore::Events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

}  // namespace tessera::node
