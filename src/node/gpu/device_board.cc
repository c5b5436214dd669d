#include "node/gpu/device_board.h"

namespace tessera::node {

namespace {
bool Same(const GpuInfo& a, const GpuInfo& b) {
  return a.uuid == b.uuid && a.index == b.index && a.memory_mib == b.memory_mib &&
         a.numa == b.numa && a.pcie_root == b.pcie_root && a.healthy == b.healthy && a.mig == b.mig;
}
}  // namespace

void DeviceBoard::Set(std::vector<GpuInfo> gpus) {
  std::lock_guard lock(mu_);
  bool same = gpus.size() == gpus_.size();
  for (size_t i = 0; same && i < gpus.size(); ++i) same = Same(gpus[i], gpus_[i]);
  if (same) return;
  gpus_ = std::move(gpus);
  ++version_;
  changed_.notify_all();
}

bool DeviceBoard::SetHealthy(const std::string& uuid, bool healthy) {
  std::lock_guard lock(mu_);
  for (GpuInfo& g : gpus_) {
    if (g.uuid != uuid) continue;
    if (g.healthy != healthy) {
      g.healthy = healthy;
      ++version_;
      changed_.notify_all();
    }
    return true;
  }
  return false;
}

void DeviceBoard::SetServing(bool serving) {
  std::lock_guard lock(mu_);
  if (serving_ == serving) return;
  serving_ = serving;
  ++version_;
  changed_.notify_all();
}

DeviceBoard::Snapshot DeviceBoard::Get() const {
  std::lock_guard lock(mu_);
  return {version_, gpus_, serving_};
}

uint64_t DeviceBoard::WaitChange(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return version_ != seen; });
  return version_;
}

}  // namespace tessera::node
