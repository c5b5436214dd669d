// RegistrationService: the gRPC `pluginregistration.Registration` service on the registration
// socket in kubelet's plugins_registry folder. kubelet's plugin watcher finds the socket, asks
// GetInfo (a DRAPlugin named gpu.tessera.io, its service socket, the gRPC services it serves)
// and tells the result through NotifyRegistrationStatus.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "pluginregistration_v1.grpc.pb.h"

namespace tessera::node::dra {

// The gRPC services GetInfo lists in supported_versions, as "<package>.<service>" (kubelet 1.36
// picks the DRAPlugin version it calls from them): dra v1's DRAPlugin and the health service, which
// the dynamic-resource-allocation helper also lists when the plugin serves it.
inline constexpr const char* kDraV1Service = "v1.DRAPlugin";
inline constexpr const char* kDraHealthService = "v1alpha1.DRAResourceHealth";

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
