// PluginManager: runs one device plugin gRPC server per resource, each on its own unix socket in
// kubelet's device-plugins folder, registers them with kubelet once they serve, and serves and
// registers them again when kubelet recreates its `kubelet.sock` (a kubelet restart deletes the
// plugins' sockets), noticed through inotify within a fraction of a second.
//
// Start/Stop from one thread; the watcher runs on its own thread. Registrations() is thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "node/allocation/allocator.h"
#include "node/gpu/device_board.h"
#include "node/kubelet/resources.h"

namespace grpc {
class Server;
}

namespace tessera::node {

class DevicePluginService;

class PluginManager {
 public:
  // `plugin_dir` is <kubelet-dir>/device-plugins.
  // `on_registered` (may be empty) hears whether every plugin is registered with kubelet, each
  // time that changes: after a registration, when kubelet.sock is recreated (kubelet restarted:
  // none is, until they register again), and at Stop.
  PluginManager(std::string plugin_dir, std::vector<ResourceSpec> resources, int split_count,
                Allocator& allocator, const DeviceBoard& board,
                std::function<void(bool)> on_registered = {});
  ~PluginManager();

  // Serves every plugin, registers each (a kubelet that is not there yet, or that refuses, is
  // logged and tried again, 0.1 s and then up to 8 s apart, and at once when kubelet.sock is
  // recreated) and starts watching for kubelet.sock. Fails when a socket cannot be served.
  Status Start();
  void Stop();
  // Successful Register calls so far.
  int Registrations() const { return registrations_; }
  std::string SocketPath(const std::string& resource) const;

 private:
  struct Plugin;
  Status ServeAll();
  void StopAll();
  // Registers each plugin not registered yet; true when all are.
  bool RegisterAll();
  // Records whether all plugins are registered, and tells on_registered_ when it changed.
  void SetRegistered(bool all);
  void WatchLoop(int inotify_fd);

  const std::string plugin_dir_;
  const std::vector<ResourceSpec> resources_;
  const int split_count_;
  Allocator& allocator_;
  const DeviceBoard& board_;
  const std::function<void(bool)> on_registered_;

  std::mutex mu_;  // serialises serve/stop/register between Start, Stop and the watcher
  std::vector<std::unique_ptr<Plugin>> plugins_;  // guarded by mu_
  bool unregistered_ = true;                      // a plugin is not registered; mu_
  std::atomic<int> registrations_{0};
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

}  // namespace tessera::node
