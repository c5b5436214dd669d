#include "node/dra/dra_service.h"

#include "log/log.h"
#include "node/dra/claim_cdi_spec.h"

namespace tessera::node::dra {

namespace {

ClaimRef RefOf(const drapb::Claim& c) {
  return {c.namespace_(), c.name(), c.uid()};
}

}  // namespace

grpc::Status DraService::NodePrepareResources(grpc::ServerContext*,
                                              const drapb::NodePrepareResourcesRequest* req,
                                              drapb::NodePrepareResourcesResponse* out) {
  for (const drapb::Claim& c : req->claims()) {
    drapb::NodePrepareResourceResponse& answer = (*out->mutable_claims())[c.uid()];
    ClaimRef ref = RefOf(c);
    Result<std::vector<PreparedDevice>> devices = driver_.Prepare(ref);
    if (!devices.ok()) {
      log::Warn("cannot prepare a ResourceClaim",
                {{"claim", ref.ToString()}, {"error", devices.status().message()}});
      answer.set_error(devices.status().message());
      continue;
    }
    for (const PreparedDevice& d : *devices) {
      drapb::Device* device = answer.add_devices();
      for (const std::string& r : d.requests) device->add_request_names(r);
      device->set_pool_name(d.pool);
      device->set_device_name(d.device);
      device->add_cdi_device_ids(ClaimDeviceCdiId(ref.uid, d.device));
      if (d.share_id) device->set_share_id(*d.share_id);
    }
  }
  return grpc::Status::OK;
}

grpc::Status DraService::NodeUnprepareResources(grpc::ServerContext*,
                                                const drapb::NodeUnprepareResourcesRequest* req,
                                                drapb::NodeUnprepareResourcesResponse* out) {
  for (const drapb::Claim& c : req->claims()) {
    drapb::NodeUnprepareResourceResponse& answer = (*out->mutable_claims())[c.uid()];
    if (Status s = driver_.Unprepare(RefOf(c)); !s.ok()) {
      log::Warn("cannot unprepare a ResourceClaim",
                {{"claim", RefOf(c).ToString()}, {"error", s.message()}});
      answer.set_error(s.message());
    }
  }
  return grpc::Status::OK;
}

}  // namespace tessera::node::dra
