#include "node/gpu/gpu.h"

namespace tessera::node {

MigDeviceRef FindMigDevice(const std::vector<GpuInfo>& gpus, const std::string& uuid) {
  for (const GpuInfo& g : gpus) {
    for (const MigInstanceInfo& m : g.mig.instances) {
      if (m.uuid == uuid) return {&g, &m};
    }
  }
  return {};
}

}  // namespace tessera::node
