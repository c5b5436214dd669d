// KubeResizeWriter: the Resizer's API writes (resizer.h) over the Kubernetes client: a merge patch
// of the pod's annotations with its resourceVersion as precondition, and core/v1 Events with the
// name the Resizer gives (a second one of that name is AlreadyExists, which counts as made).
// Each patch is bounded by `timeout` (0: the client's own), retries included: with several
// replicas it must be answered before another replica may take over (as the Binder's).
// Thread-safe as the client is; the client must outlive it.
#pragma once

#include <chrono>

#include "kube/client.h"
#include "scheduler/resizer.h"

namespace tessera::scheduler {

class KubeResizeWriter : public ResizeWriter {
 public:
  KubeResizeWriter(kube::Client& client, std::chrono::milliseconds timeout)
      : client_(client), timeout_(timeout) {}
  Result<nlohmann::json> PatchPod(const PodId& pod,
                                  const std::map<std::string, std::string>& annotations,
                                  const std::string& resource_version) override;
  Result<nlohmann::json> GetPod(const PodId& pod) override;
  Status RecordEvent(const nlohmann::json& pod, const std::string& name, const std::string& type,
                     const std::string& reason, const std::string& message) override;

 private:
  kube::Client& client_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace tessera::scheduler
