#include "node/gpu/inventory.h"

#include "annotations/inventory.h"

namespace tessera::node {

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
                              .memory_scaling = g.memory_scaling});
  }
  return annotations::InventoryToJson(inventory);
}

}  // namespace tessera::node
