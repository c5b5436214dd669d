// RegistrationService: the gRPC `pluginregistration.Registration` service on the registration
// socket in kubelet's plugins_registry folder. kubelet's plugin watcher finds the socket, asks
// GetInfo (a DRAPlugin named gpu.tessera.io, its service socket, the DRA gRPC services it serves)
// and tells the result through NotifyRegistrationStatus.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "pluginregistration_v1.grpc.pb.h"

namespace tessera::node::dra {

// The DRA service kubelet 1.36 accepts in supported_versions (dra v1's DRAPluginService).
inline constexpr const char* kDraV1Service = "v1.DRAPlugin";

class RegistrationService final : public ::pluginregistration::Registration::Service {
 public:
  // `on_status` (may be empty) hears each NotifyRegistrationStatus: registered, and kubelet's
  // error when not.
  RegistrationService(std::string driver, std::string endpoint,
                      std::function<void(bool, const std::string&)> on_status = {})
      : driver_(std::move(driver)),
        endpoint_(std::move(endpoint)),
        on_status_(std::move(on_status)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const ::pluginregistration::InfoRequest*,
                       ::pluginregistration::PluginInfo* out) override;
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const ::pluginregistration::RegistrationStatus* status,
                                        ::pluginregistration::RegistrationStatusResponse*) override;

 private:
  const std::string driver_, endpoint_;
  const std::function<void(bool, const std::string&)> on_status_;
};

}  // namespace tessera::node::dra
