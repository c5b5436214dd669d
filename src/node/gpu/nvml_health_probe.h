// NvmlHealthProbe: HealthProbe over NVML: Xid critical-error events from an event set registered
// on every GPU that supports them, and liveness as "the GPU's memory can be queried".
//
// WaitXid from one thread (the monitor's); Alive from any. The library must outlive the probe.
#pragma once

#include <map>
#include <mutex>
#include <vector>

#include "node/gpu/gpu.h"
#include "node/gpu/health_monitor.h"
#include "node/gpu/nvml_library.h"

namespace tessera::node {

class NvmlHealthProbe : public HealthProbe {
 public:
  // Registers Xid events for `gpus`; a GPU or driver without events is logged and only probed.
  NvmlHealthProbe(const NvmlLibrary& nvml, const std::vector<GpuInfo>& gpus);
  ~NvmlHealthProbe() override;

  std::optional<XidEvent> WaitXid(std::chrono::milliseconds timeout) override;
  bool Alive(const std::string& uuid) override;

 private:
  const NvmlLibrary& nvml_;
  nvmlEventSet_t set_ = nullptr;
  std::mutex mu_;
  std::map<nvmlDevice_t, std::string> uuid_of_;  // guarded by mu_
};

}  // namespace tessera::node
