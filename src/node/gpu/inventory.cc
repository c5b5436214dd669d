#include "node/gpu/inventory.h"

#include <nlohmann/json.hpp>

namespace tessera::node {

std::string GpusAnnotation(const std::vector<GpuInfo>& gpus, double cores_scaling, int slots,
                           bool serving) {
  nlohmann::json list = nlohmann::json::array();
  for (const GpuInfo& g : gpus) {
    list.push_back({{"uuid", g.uuid},
                    {"index", g.index},
                    {"model", g.model},
                    {"memoryMiB", g.memory_mib},
                    {"sms", g.sms},
                    {"numa", g.numa},
                    {"healthy", g.healthy},
                    {"pciBusId", g.pci_bus_id},
                    {"coresScaling", cores_scaling},
                    {"slots", slots}});
  }
  return nlohmann::json{{"version", 1}, {"serving", serving}, {"gpus", list}}.dump();
}

}  // namespace tessera::node
