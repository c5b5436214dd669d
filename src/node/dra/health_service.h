// HealthService: the gRPC `v1alpha1.DRAResourceHealth` service. kubelet 1.36 opens
// NodeWatchResources for every registered DRA plugin (feature gate ResourceHealthStatus, beta and
// on by default since 1.36) and shows each device's health in the status of the pods using it.
// The stream sends every GPU's health (`gpu-<index>` in the node's pool; unhealthy as the health
// monitor marks it on the DeviceBoard) at once, at each change, and at least every `resend`:
// kubelet takes a device it has not heard about for 30 s as Unknown.
//
// Thread-safe: gRPC calls it from its own threads; Stop() ends open streams.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "dra_health_v1alpha1.grpc.pb.h"
#include "node/gpu/device_board.h"

namespace tessera::node::dra {

class HealthService final : public ::v1alpha1::DRAResourceHealth::Service {
 public:
  // `board` must outlive the service.
  HealthService(std::string pool, const DeviceBoard& board,
                std::chrono::milliseconds resend = std::chrono::seconds(10))
      : pool_(std::move(pool)), board_(board), resend_(resend) {}

  // The message for `gpus`, stamped `now_unix` (seconds).
  ::v1alpha1::NodeWatchResourcesResponse Health(const std::vector<GpuInfo>& gpus,
                                                int64_t now_unix) const;
  void Stop() { stopping_ = true; }

  grpc::Status NodeWatchResources(
      grpc::ServerContext* ctx, const ::v1alpha1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* writer) override;

 private:
  const std::string pool_;
  const DeviceBoard& board_;
  const std::chrono::milliseconds resend_;
  std::atomic<bool> stopping_{false};
};

}  // namespace tessera::node::dra
