// MemoryPodStore: an in-memory PodSource and ApiWriter for tests, benchmarks and the fake kubelet's
// own runs. Pods are API objects; patches apply to them as a merge patch of annotations would, to a
// new copy of the pod (a PodRef handed out earlier keeps the version it had).
//
// Thread-safe (one mutex).
#pragma once

#include <map>
#include <mutex>

#include "node/pods/pod_source.h"

namespace tessera::node {

class MemoryPodStore : public PodSource, public ApiWriter {
 public:
  explicit MemoryPodStore(std::string node) : node_(std::move(node)) {}

  // Adds or replaces a pod (keyed by namespace/name).
  void Put(nlohmann::json pod);
  void Remove(const std::string& ns, const std::string& name);
  // The node's annotations and labels as patched so far.
  std::map<std::string, std::string> NodeAnnotations() const;
  std::map<std::string, std::string> NodeLabels() const;
  // Makes every later patch fail with `status` (OK restores normal behaviour).
  void FailWrites(Status status);

  std::vector<PodRef> NodePods() const override;
  PodRef FindPod(const std::string& ns, const std::string& name) const override;
  Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                             const AnnotationPatch& patch) override;
  Status PatchNode(const std::string& node, const AnnotationPatch& annotations,
                   const AnnotationPatch& labels) override;
  Status CreatePodEvent(const std::string& ns, const std::string& name, const std::string& type,
                        const std::string& reason, const std::string& message) override;
  // "<namespace>/<name> <type> <reason>: <message>" per event recorded so far.
  std::vector<std::string> Events() const;

 private:
  const std::string node_;
  mutable std::mutex mu_;
  std::map<std::string, PodRef> pods_;                   // guarded by mu_
  std::map<std::string, std::string> node_annotations_;  // guarded by mu_
  std::map<std::string, std::string> node_labels_;       // guarded by mu_
  Status fail_;                                          // guarded by mu_
  std::vector<std::string> events_;                      // guarded by mu_
};

}  // namespace tessera::node
