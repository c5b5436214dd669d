// KubePodSource: the node agent's PodSource and ApiWriter on the Kubernetes API server: an
// informer on the pods with spec.nodeName=<node> (the watch cache every lookup reads) and merge
// patches of pod and node annotations.
//
// Thread-safe. The client must outlive the source.
#pragma once

#include <memory>

#include "kube/client.h"
#include "kube/informer.h"
#include "node/pod_source.h"

namespace tessera::node {

class KubePodSource : public PodSource, public ApiWriter {
 public:
  KubePodSource(kube::Client& client, const std::string& node);
  // Starts the informer and waits for its first list.
  Status Start(std::chrono::milliseconds sync_timeout);
  void Stop();

  std::vector<nlohmann::json> NodePods() const override;
  std::optional<nlohmann::json> Pod(const std::string& ns, const std::string& name) const override;
  Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                             const AnnotationPatch& patch) override;
  Status PatchNodeAnnotations(const std::string& node, const AnnotationPatch& patch) override;

 private:
  kube::Client& client_;
  const std::string node_;
  kube::Informer pods_;
};

}  // namespace tessera::node
