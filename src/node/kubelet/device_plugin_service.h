// DevicePluginService: the gRPC `v1beta1.DevicePlugin` service of one resource. A thin adapter:
// ListAndWatch follows the DeviceBoard, the allocation calls translate to the Allocator.
//
// Thread-safe: gRPC calls it from its own threads; Stop() ends open ListAndWatch streams.
#pragma once

#include <atomic>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "node/allocation/allocator.h"
#include "node/gpu/device_board.h"
#include "node/kubelet/resources.h"

namespace tessera::node {

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  DevicePluginService(ResourceSpec resource, int split_count, Allocator& allocator,
                      const DeviceBoard& board);

  // The ListAndWatch message for `gpus` (unhealthy GPUs' devices say "Unhealthy").
  v1beta1::ListAndWatchResponse DeviceList(const std::vector<GpuInfo>& gpus) const;
  static v1beta1::DevicePluginOptions Options();
  // Makes open ListAndWatch streams return (before the server shuts down).
  void Stop() { stopping_ = true; }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override;
  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* out) override;
  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* out) override;
  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest* req,
                                 v1beta1::PreStartContainerResponse*) override;

 private:
  const ResourceSpec resource_;
  const int split_count_;
  Allocator& allocator_;
  const DeviceBoard& board_;
  std::atomic<bool> stopping_{false};
};

}  // namespace tessera::node
