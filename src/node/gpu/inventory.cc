#include "node/gpu/inventory.h"

#include "annotations/inventory.h"

namespace tessera::node {

namespace {

// Published for a GPU in MIG mode (or about to be) and for one the configuration gives MIG;
// otherwise absent, so that an inventory without MIG is what it was before.
std::optional<annotations::InventoryMig> MigOf(const GpuInfo& g) {
  const MigStatus& mig = g.mig;
  if (!mig.capable || (!mig.enabled && !mig.pending && mig.mode == MigMode::kNone)) {
    return std::nullopt;
  }
  annotations::InventoryMig out{.mode = MigModeName(mig.mode),
                                .enabled = mig.enabled,
                                .pending = mig.pending,
                                .instances = {}};
  for (const MigInstanceInfo& m : mig.instances) {
    out.instances.push_back({.uuid = m.uuid,
                             .profile = m.profile,
                             .device = m.device_name == m.profile ? "" : m.device_name,
                             .start = m.start,
                             .size = m.size,
                             .memory_mib = m.memory_mib,
                             .sms = m.sms,
                             .healthy = m.healthy && g.healthy});
  }
  return out;
}

}  // namespace

std::string GpusAnnotation(const std::vector<GpuInfo>& gpus, double cores_scaling, int slots,
                           bool serving) {
  annotations::Inventory inventory{.serving = serving, .gpus = {}};
  for (const GpuInfo& g : gpus) {
    inventory.gpus.push_back({.uuid = g.uuid,
                              .index = g.index,
                              .model = g.model,
                              .memory_mib = g.memory_mib,
                              .sms = g.sms,
                              .numa = g.numa,
                              .healthy = g.healthy,
                              .slots = slots,
                              .pci_bus_id = g.pci_bus_id,
                              .cores_scaling = cores_scaling,
                              .memory_scaling = g.memory_scaling,
                              .mig = MigOf(g)});
  }
  return annotations::InventoryToJson(inventory);
}

}  // namespace tessera::node
