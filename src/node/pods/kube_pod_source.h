// KubePodSource: the node agent's PodSource and ApiWriter on the Kubernetes API server: an
// informer on the pods with spec.nodeName=<node> and merge patches of pod and node annotations.
// The informer's handlers publish each pod version once as a PodRef, so that lookups (every
// Allocate scans all pods of the node) hand out shared pointers instead of copying pods.
//
// Thread-safe. The client must outlive the source.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "kube/client.h"
#include "kube/informer.h"
#include "node/pods/pod_source.h"

namespace tessera::node {

class KubePodSource : public PodSource, public ApiWriter {
 public:
  KubePodSource(kube::Client& client, const std::string& node);
  // Starts the informer and waits for its first list.
  Status Start(std::chrono::milliseconds sync_timeout);
  void Stop();

  std::vector<PodRef> NodePods() const override;
  PodRef FindPod(const std::string& ns, const std::string& name) const override;
  Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                             const AnnotationPatch& patch) override;
  Status PatchNode(const std::string& node, const AnnotationPatch& annotations,
                   const AnnotationPatch& labels) override;
  Status CreatePodEvent(const std::string& ns, const std::string& name, const std::string& type,
                        const std::string& reason, const std::string& message) override;

 private:
  void Publish(const nlohmann::json& pod);
  void Unpublish(const nlohmann::json& pod);

  kube::Client& client_;
  const std::string node_;
  // Declared before the informer, whose thread writes them until it is destroyed.
  mutable std::mutex mu_;
  std::map<std::string, PodRef> published_;  // by "namespace/name"; guarded by mu_
  kube::Informer pods_;
};

}  // namespace tessera::node
