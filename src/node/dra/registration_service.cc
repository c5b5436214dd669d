#include "node/dra/registration_service.h"

#include "log/log.h"

namespace tessera::node::dra {

grpc::Status RegistrationService::GetInfo(grpc::ServerContext*,
                                          const ::pluginregistration::InfoRequest*,
                                          ::pluginregistration::PluginInfo* out) {
  out->set_type("DRAPlugin");
  out->set_name(driver_);
  out->set_endpoint(endpoint_);
  out->add_supported_versions(kDraV1Service);
  out->add_supported_versions(kDraHealthService);
  return grpc::Status::OK;
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext*, const ::pluginregistration::RegistrationStatus* status,
    ::pluginregistration::RegistrationStatusResponse*) {
  if (status->plugin_registered()) {
    log::Info("registered with kubelet as a DRA plugin", {{"driver", driver_}});
  } else {
    log::Error("kubelet refused the DRA plugin's registration",
               {{"driver", driver_}, {"error", status->error()}});
  }
  if (on_status_) on_status_(status->plugin_registered(), status->error());
  return grpc::Status::OK;
}

}  // namespace tessera::node::dra
