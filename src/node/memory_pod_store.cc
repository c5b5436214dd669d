#include "node/memory_pod_store.h"

namespace tessera::node {

using nlohmann::json;

void MemoryPodStore::Put(json pod) {
  std::string key =
      pod["metadata"].value("namespace", "default") + "/" + pod["metadata"].value("name", "");
  std::lock_guard lock(mu_);
  pods_[key] = std::move(pod);
}

void MemoryPodStore::Remove(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  pods_.erase(ns + "/" + name);
}

std::map<std::string, std::string> MemoryPodStore::NodeAnnotations() const {
  std::lock_guard lock(mu_);
  return node_annotations_;
}

void MemoryPodStore::FailWrites(Status status) {
  std::lock_guard lock(mu_);
  fail_ = std::move(status);
}

std::vector<json> MemoryPodStore::NodePods() const {
  std::lock_guard lock(mu_);
  std::vector<json> out;
  for (const auto& [key, pod] : pods_) {
    const json& spec = pod.contains("spec") ? pod["spec"] : json::object();
    if (spec.value("nodeName", "") == node_) out.push_back(pod);
  }
  return out;
}

std::optional<json> MemoryPodStore::Pod(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

Status MemoryPodStore::PatchPodAnnotations(const std::string& ns, const std::string& name,
                                           const AnnotationPatch& patch) {
  std::lock_guard lock(mu_);
  if (!fail_.ok()) return fail_;
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return NotFound("pod " + ns + "/" + name + " not found");
  json& annotations = it->second["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  for (const auto& [k, v] : patch) {
    if (v) {
      annotations[k] = *v;
    } else {
      annotations.erase(k);
    }
  }
  return Status::Ok();
}

Status MemoryPodStore::PatchNodeAnnotations(const std::string& node, const AnnotationPatch& patch) {
  std::lock_guard lock(mu_);
  if (!fail_.ok()) return fail_;
  if (node != node_) return NotFound("node " + node + " not found");
  for (const auto& [k, v] : patch) {
    if (v) {
      node_annotations_[k] = *v;
    } else {
      node_annotations_.erase(k);
    }
  }
  return Status::Ok();
}

}  // namespace tessera::node
