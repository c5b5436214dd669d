// FakeDeviceCheckpoint: kubelet's device manager checkpoint,
// <dir>/device-plugins/kubelet_internal_checkpoint, written from the records the fake kubelet
// keeps as it admits pods, in kubelet's format (node/kubelet/kubelet_checkpoint.h): after every
// change, as a new file renamed into place. The node agent reads it to tell which container holds
// which devices.
//
// Thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace tessera::fakekubelet {

class FakeDeviceCheckpoint {
 public:
  explicit FakeDeviceCheckpoint(std::string dir);

  // Creates device-plugins/ and writes an empty checkpoint.
  Status Start();
  std::string Path() const { return dir_ + "/device-plugins/kubelet_internal_checkpoint"; }

  // `answer` is the serialized ContainerAllocateResponse the plugin gave.
  void Record(const std::string& ns, const std::string& pod, const std::string& uid,
              const std::string& container, const std::string& resource,
              const std::vector<std::string>& device_ids, const std::string& answer);
  void ForgetPod(const std::string& ns, const std::string& pod);
  // Device IDs of `resource` held by any recorded container.
  std::vector<std::string> Used(const std::string& resource) const;

 private:
  struct Entry {
    std::string ns, pod, uid, container, resource;
    std::vector<std::string> ids;
    std::string answer;
  };
  void WriteLocked() const;

  const std::string dir_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // guarded by mu_
};

}  // namespace tessera::fakekubelet
