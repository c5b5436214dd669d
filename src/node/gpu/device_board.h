// DeviceBoard: the current GPU list with health, versioned, that every device plugin's
// ListAndWatch stream follows. Discovery and the health monitor update it; streams wait on it.
//
// Thread-safe (mutex + condition variable).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "node/gpu/gpu.h"

namespace tessera::node {

class DeviceBoard {
 public:
  struct Snapshot {
    uint64_t version = 0;
    std::vector<GpuInfo> gpus;
    bool serving = false;  // every device plugin is registered with kubelet
  };

  // Replaces the list; wakes the streams when anything changed.
  void Set(std::vector<GpuInfo> gpus);
  // Sets one GPU's health; returns false when no GPU has `uuid`.
  bool SetHealthy(const std::string& uuid, bool healthy);
  // Whether kubelet can allocate the node's devices now: every plugin registered. The inventory
  // says so, and the scheduler places no pod on the node while it is false (kubelet would fail
  // the pod with UnexpectedAdmissionError).
  void SetServing(bool serving);
  Snapshot Get() const;
  // Waits until the version differs from `seen` or `timeout` passes; returns the current version.
  uint64_t WaitChange(uint64_t seen, std::chrono::milliseconds timeout) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  uint64_t version_ = 1;       // guarded by mu_
  std::vector<GpuInfo> gpus_;  // guarded by mu_
  bool serving_ = false;       // guarded by mu_
};

}  // namespace tessera::node
