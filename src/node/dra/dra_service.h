// DraService: the gRPC `k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin` service kubelet calls to prepare
// and unprepare claims. A thin adapter over DraDriver: every claim of a call gets an entry in the
// answer, a failure in its `error` field (the call itself succeeds).
//
// Thread-safe: gRPC calls it from its own threads.
#pragma once

#include "dra_v1.grpc.pb.h"
#include "node/dra/dra_driver.h"

namespace tessera::node::dra {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;

class DraService final : public drapb::DRAPlugin::Service {
 public:
  // `driver` must outlive the service.
  explicit DraService(DraDriver& driver) : driver_(driver) {}

  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const drapb::NodePrepareResourcesRequest* req,
                                    drapb::NodePrepareResourcesResponse* out) override;
  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const drapb::NodeUnprepareResourcesRequest* req,
                                      drapb::NodeUnprepareResourcesResponse* out) override;

 private:
  DraDriver& driver_;
};

}  // namespace tessera::node::dra
