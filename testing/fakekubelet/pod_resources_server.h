// FakePodResources: kubelet's `v1.PodResourcesLister` served on
// <dir>/pod-resources/kubelet.sock from records the fake kubelet keeps as it admits pods. As in
// kubelet, plain init containers are not listed (Record them with `listed = false`).
//
// Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace grpc {
class Server;
}

namespace tessera::fakekubelet {

class FakePodResources {
 public:
  explicit FakePodResources(std::string dir);
  ~FakePodResources();

  Status Start();
  void Stop();
  std::string SocketPath() const { return dir_ + "/pod-resources/kubelet.sock"; }

  void Record(const std::string& ns, const std::string& pod, const std::string& container,
              const std::string& resource, const std::vector<std::string>& device_ids,
              bool listed = true);
  void ForgetPod(const std::string& ns, const std::string& pod);
  // Device IDs of `resource` held by any recorded container.
  std::vector<std::string> Used(const std::string& resource) const;
  int Calls() const;

 private:
  class Service;
  struct Entry {
    std::string ns, pod, container, resource;
    std::vector<std::string> ids;
    bool listed;
  };
  const std::string dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // guarded by mu_
  int calls_ = 0;               // guarded by mu_
};

}  // namespace tessera::fakekubelet
