#include "node/pod_resources.h"

#include <algorithm>
#include <chrono>

#include <grpcpp/grpcpp.h>

#include "podresources_v1.grpc.pb.h"

namespace tessera::node {

KubeletPodResources::KubeletPodResources(std::string socket_path, int timeout_ms)
    : socket_path_(std::move(socket_path)),
      timeout_ms_(timeout_ms),
      channel_(grpc::CreateChannel("unix:" + socket_path_, grpc::InsecureChannelCredentials())) {}

Result<std::vector<ContainerDevices>> KubeletPodResources::List() {
  auto stub = v1::PodResourcesLister::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
  ctx.set_wait_for_ready(false);
  v1::ListPodResourcesRequest req;
  v1::ListPodResourcesResponse resp;
  grpc::Status s = stub->List(&ctx, req, &resp);
  if (!s.ok()) {
    return Unavailable("kubelet PodResources List at " + socket_path_ + ": " + s.error_message());
  }
  // kubelet answers one ContainerDevices per device ID (and NUMA node), not one per resource:
  // gather them per (pod, container, resource).
  std::vector<ContainerDevices> out;
  for (const v1::PodResources& p : resp.pod_resources()) {
    for (const v1::ContainerResources& c : p.containers()) {
      size_t first = out.size();
      for (const v1::ContainerDevices& d : c.devices()) {
        auto same = std::find_if(
            out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
            [&](const ContainerDevices& e) { return e.resource == d.resource_name(); });
        if (same == out.end()) {
          out.push_back({p.namespace_(), p.name(), c.name(), d.resource_name(), {}});
          same = out.end() - 1;
        }
        same->device_ids.insert(same->device_ids.end(), d.device_ids().begin(),
                                d.device_ids().end());
      }
    }
  }
  return out;
}

}  // namespace tessera::node
