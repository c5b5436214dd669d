// FakeKubeletRegistry: kubelet's device plugin side, for tests and tessera-fake-kubelet. Serves
// `v1beta1.Registration` on <dir>/device-plugins/kubelet.sock; on Register it checks the request
// as kubelet does (version "v1beta1", domain-prefixed resource, endpoint a file name in the
// folder), dials the plugin, asks its options and follows its ListAndWatch stream, keeping the
// latest device list per resource. Recreate() behaves like a kubelet restart: the plugins'
// sockets are deleted and kubelet.sock is created anew.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "deviceplugin_v1beta1.grpc.pb.h"

namespace grpc {
class Server;
}

namespace tessera::fakekubelet {

struct PluginState {
  std::string resource;
  std::string endpoint;  // socket path
  v1beta1::DevicePluginOptions options;
  std::vector<v1beta1::Device> devices;  // latest ListAndWatch message
  size_t last_message_bytes = 0;
  int messages = 0;
  int registrations = 0;
  bool stream_open = false;
};

class FakeKubeletRegistry {
 public:
  // `dir` plays /var/lib/kubelet; its device-plugins folder is created.
  explicit FakeKubeletRegistry(std::string dir);
  ~FakeKubeletRegistry();

  Status Start();
  void Stop();
  // Stops serving, deletes every socket in device-plugins, serves a new kubelet.sock.
  Status Recreate();
  // The next `count` Register calls are refused (UNAVAILABLE), as by a kubelet that is starting.
  void RefuseRegistrations(int count);

  std::string PluginDir() const { return dir_ + "/device-plugins"; }
  std::vector<std::string> Resources() const;
  // A copy of a resource's state; NotFound when it never registered.
  Result<PluginState> State(const std::string& resource) const;
  // Waits until `pred` holds for the resource's state (or `timeout`); returns whether it did.
  bool WaitFor(const std::string& resource, const std::function<bool(const PluginState&)>& pred,
               std::chrono::milliseconds timeout) const;
  // A stub for calling the registered plugin of `resource`.
  Result<std::unique_ptr<v1beta1::DevicePlugin::Stub>> Plugin(const std::string& resource) const;

 private:
  class Service;
  Status Register(const v1beta1::RegisterRequest& req);
  bool TakeRefusal();
  void Follow(std::string resource, std::string endpoint, int generation);

  const std::string dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;

  mutable std::mutex mu_;
  int refusals_ = 0;  // guarded by mu_
  mutable std::condition_variable changed_;
  std::map<std::string, PluginState> plugins_;                           // guarded by mu_
  std::map<std::string, int> generation_;                                // guarded by mu_
  std::map<std::string, std::shared_ptr<grpc::ClientContext>> streams_;  // guarded by mu_
  std::vector<std::thread> followers_;                                   // guarded by mu_
  bool stopping_ = false;                                                // guarded by mu_
};

}  // namespace tessera::fakekubelet
