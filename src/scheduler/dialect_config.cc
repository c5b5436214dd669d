#include "scheduler/dialect_config.h"

namespace tessera::scheduler {

std::vector<std::string> DialectConfig::ResourceNames() const {
  std::vector<std::string> out;
  auto add = [&](bool enabled, std::vector<std::string> names) {
    if (!enabled) return;
    for (std::string& n : names) {
      if (!n.empty()) out.push_back(std::move(n));
    }
  };
  add(vgpu_enabled, {vgpu_count, vgpu_memory, vgpu_memory_percent, vgpu_cores});
  add(vcuda_enabled, {vcuda_core, vcuda_memory});
  add(gpushare_enabled, {gpushare_memory});
  return out;
}

}  // namespace tessera::scheduler
