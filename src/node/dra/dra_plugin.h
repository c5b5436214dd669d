// DraPlugin: the DRA kubelet plugin of gpu.tessera.io on its two unix sockets:
//   <kubelet-dir>/plugins/gpu.tessera.io/dra.sock           DRAPlugin v1 and DRAResourceHealth
//   <kubelet-dir>/plugins_registry/gpu.tessera.io-reg.sock  pluginregistration Registration
// With an instance UID (the pod's, for a DaemonSet's rolling update with maxSurge) they are
// dra-<uid>.sock and gpu.tessera.io-<uid>-reg.sock, as the dynamic-resource-allocation helper
// names them: two instances on one node then serve at once, kubelet registers both (one endpoint
// each) and calls the newest that answers, and the first to stop removes only its own. The driver
// serialises their calls and shares its state (dra_driver.h). At each serve, sockets of this driver
// that no process listens on (an instance that died without removing them) are removed, so kubelet
// drops their registrations.
// The service socket serves before the registration socket appears, so kubelet's plugin watcher
// (which registers a plugin when its socket is created in plugins_registry, and deregisters it when
// the socket is deleted) never finds an endpoint that does not answer. kubelet does not wipe these
// folders when it restarts: it finds the socket again, asks GetInfo, and calls NodePrepareResources
// again for the claims of its pods (answered from the prepared-claims state). A socket that is
// removed (the folder wiped, a node cleanup) is noticed within `socket_check` and both are served
// again. Stop removes both sockets, so kubelet deregisters the plugin.
//
// Start/Stop from one thread; the socket check runs on its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "node/agent_part.h"
#include "node/dra/dra_driver.h"
#include "node/gpu/device_board.h"

namespace grpc {
class Server;
}

namespace tessera::node::dra {

class DraService;
class HealthService;
class RegistrationService;

struct DraPluginOptions {
  std::string kubelet_dir = "/var/lib/kubelet";
  std::string pool;          // the node's name
  std::string instance_uid;  // empty: the fixed socket names; else names unique to the instance
  std::chrono::milliseconds socket_check{500};
  std::chrono::milliseconds health_resend{10'000};
};

class DraPlugin : public AgentPart {
 public:
  // `driver` and `board` must outlive the plugin.
  DraPlugin(DraPluginOptions options, DraDriver& driver, const DeviceBoard& board);
  ~DraPlugin() override;

  // Initialises the driver (state folders, prepared claims), serves both sockets and starts the
  // socket check. Fails when the instance UID is not a name (letters, digits, '-', '_', '.'; at
  // most 63), the driver's state cannot be read or a socket cannot be served.
  Status Start() override;
  void Stop() override;

  std::string ServiceSocket() const;
  std::string RegistrationSocket() const;
  // How many times the sockets were served (1 after Start, more after they were removed).
  int Serves() const { return serves_; }
  // What kubelet last said through NotifyRegistrationStatus.
  bool Registered() const { return registered_; }

 private:
  std::string ServiceDir() const;
  std::string RegistryDir() const;
  std::string InstanceSuffix() const;  // "" or "-<instance_uid>"
  Status Serve();                      // mu_ held
  void StopServing();                  // mu_ held
  void CheckLoop();

  const DraPluginOptions options_;
  DraDriver& driver_;
  const DeviceBoard& board_;
  std::unique_ptr<DraService> dra_;
  std::unique_ptr<HealthService> health_;
  std::unique_ptr<RegistrationService> registration_;

  std::mutex mu_;  // serialises serving between Start, Stop and the check
  std::unique_ptr<grpc::Server> service_server_, registration_server_;  // guarded by mu_
  std::atomic<int> serves_{0};
  std::atomic<bool> registered_{false};
  std::atomic<bool> stop_{false};
  std::thread checker_;
};

}  // namespace tessera::node::dra
