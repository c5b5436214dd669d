#include "node/gpu/nvml_health_probe.h"

#include <thread>

#include "log/log.h"

namespace tessera::node {

NvmlHealthProbe::NvmlHealthProbe(const NvmlLibrary& nvml, const std::vector<GpuInfo>& gpus)
    : nvml_(nvml) {
  if (!nvml_.EventSetCreate || !nvml_.DeviceRegisterEvents || !nvml_.EventSetWait ||
      nvml_.EventSetCreate(&set_) != NVML_SUCCESS) {
    log::Warn("NVML events unavailable: health is probed only");
    set_ = nullptr;
  }
  for (const GpuInfo& g : gpus) {
    nvmlDevice_t dev = nullptr;
    if (nvml_.DeviceGetHandleByIndex(static_cast<unsigned>(g.index), &dev) != NVML_SUCCESS)
      continue;
    {
      std::lock_guard lock(mu_);
      uuid_of_[dev] = g.uuid;
    }
    if (set_ != nullptr &&
        nvml_.DeviceRegisterEvents(dev, nvmlEventTypeXidCriticalError, set_) != NVML_SUCCESS) {
      log::Warn("GPU does not report Xid events", {{"gpu", g.uuid}});
    }
  }
}

NvmlHealthProbe::~NvmlHealthProbe() {
  if (set_ != nullptr && nvml_.EventSetFree) nvml_.EventSetFree(set_);
}

std::optional<XidEvent> NvmlHealthProbe::WaitXid(std::chrono::milliseconds timeout) {
  if (set_ == nullptr) {
    std::this_thread::sleep_for(timeout);
    return std::nullopt;
  }
  nvmlEventData_t data{};
  nvmlReturn_t r = nvml_.EventSetWait(set_, &data, static_cast<unsigned>(timeout.count()));
  if (r != NVML_SUCCESS || (data.eventType & nvmlEventTypeXidCriticalError) == 0) {
    return std::nullopt;
  }
  std::lock_guard lock(mu_);
  auto it = uuid_of_.find(data.device);
  if (it == uuid_of_.end()) return std::nullopt;
  return XidEvent{it->second, data.eventData};
}

bool NvmlHealthProbe::Alive(const std::string& uuid) {
  nvmlDevice_t dev = nullptr;
  {
    std::lock_guard lock(mu_);
    for (const auto& [d, u] : uuid_of_) {
      if (u == uuid) dev = d;
    }
  }
  if (dev == nullptr) return false;
  nvmlMemory_t mem{};
  return nvml_.DeviceGetMemoryInfo(dev, &mem) == NVML_SUCCESS;
}

}  // namespace tessera::node
