#include "node/dra/health_service.h"

#include <algorithm>

#include "node/dra/claim_grant.h"

namespace tessera::node::dra {

namespace pb = ::v1alpha1;

pb::NodeWatchResourcesResponse HealthService::Health(const std::vector<GpuInfo>& gpus,
                                                     int64_t now_unix) const {
  pb::NodeWatchResourcesResponse out;
  for (const GpuInfo& g : gpus) {
    pb::DeviceHealth* d = out.add_devices();
    d->mutable_device()->set_pool_name(pool_);
    d->mutable_device()->set_device_name(DeviceName(g.index));
    d->set_health(g.healthy ? pb::HEALTHY : pb::UNHEALTHY);
    d->set_last_updated_time(now_unix);
    if (!g.healthy) {
      d->set_message("GPU " + g.uuid +
                     " does not answer or had a critical Xid error (node agent's health monitor)");
    }
  }
  return out;
}

grpc::Status HealthService::NodeWatchResources(
    grpc::ServerContext* ctx, const pb::NodeWatchResourcesRequest*,
    grpc::ServerWriter<pb::NodeWatchResourcesResponse>* writer) {
  using Clock = std::chrono::steady_clock;
  uint64_t sent = 0;
  Clock::time_point next = Clock::now();
  while (!stopping_ && !ctx->IsCancelled()) {
    DeviceBoard::Snapshot snap = board_.Get();
    if (snap.version != sent || Clock::now() >= next) {
      int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
      if (!writer->Write(Health(snap.gpus, now))) break;
      sent = snap.version;
      next = Clock::now() + resend_;
    }
    // Short waits so that Stop and a cancelled stream end the loop soon.
    board_.WaitChange(sent, std::min(resend_, std::chrono::milliseconds(200)));
  }
  return grpc::Status::OK;
}

}  // namespace tessera::node::dra
