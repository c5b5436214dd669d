// Kubelet's PodResources API as the node agent uses it: which pod and container own which device
// IDs. PodResourcesSource is the interface (fakes in tests); KubeletPodResources calls kubelet's
// `v1.PodResourcesLister/List` over its unix socket.
//
// Thread-safe: KubeletPodResources keeps one channel and may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace grpc {
class Channel;
}

namespace tessera::node {

struct ContainerDevices {
  std::string ns, pod, container, resource;
  std::vector<std::string> device_ids;
};

class PodResourcesSource {
 public:
  virtual ~PodResourcesSource() = default;
  // Every (pod, container, resource) with devices, from kubelet's device manager.
  virtual Result<std::vector<ContainerDevices>> List() = 0;
};

class KubeletPodResources : public PodResourcesSource {
 public:
  // `socket_path` is usually /var/lib/kubelet/pod-resources/kubelet.sock. Each List call is
  // bounded by `timeout_ms`.
  explicit KubeletPodResources(std::string socket_path, int timeout_ms = 2000);
  Result<std::vector<ContainerDevices>> List() override;

 private:
  const std::string socket_path_;
  const int timeout_ms_;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace tessera::node
