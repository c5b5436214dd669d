#include "annotations/inventory.h"

#include <charconv>
#include <set>

#include "annotations/json_fields.h"
#include "annotations/names.h"

namespace tessera::annotations {

using internal::Field;
using nlohmann::json;

std::string MemoryScalingText(double memory_scaling) {
  char text[32];
  auto [end, ec] = std::to_chars(text, text + sizeof(text), memory_scaling);
  return ec == std::errc() ? std::string(text, end) : std::string("?");
}

std::string InventoryToJson(const Inventory& inventory) {
  json list = json::array();
  for (const InventoryGpu& g : inventory.gpus) {
    json gpu = {{"uuid", g.uuid},
                {"index", g.index},
                {"model", g.model},
                {"memoryMiB", g.memory_mib},
                {"sms", g.sms},
                {"numa", g.numa},
                {"healthy", g.healthy},
                {"slots", g.slots},
                {"coresScaling", g.cores_scaling},
                {"memoryScaling", g.memory_scaling}};
    if (!g.pci_bus_id.empty()) gpu["pciBusId"] = g.pci_bus_id;
    list.push_back(std::move(gpu));
  }
  return json{{"version", 1}, {"serving", inventory.serving}, {"gpus", list}}.dump();
}

Result<Inventory> ParseInventory(std::string_view text) {
  ASSIGN_OR_RETURN(json doc, internal::ParseVersionedObject(text, kGpus));
  Inventory out;
  RETURN_IF_ERROR(Field(doc, "serving", kGpus, out.serving, false));
  auto gpus = doc.find("gpus");
  if (gpus == doc.end() || !gpus->is_array()) {
    return InvalidArgument(std::string(kGpus) + ": \"gpus\" must be a list");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < gpus->size(); ++i) {
    const json& g = (*gpus)[i];
    std::string where = std::string(kGpus) + " gpus[" + std::to_string(i) + "]";
    if (!g.is_object()) return InvalidArgument(where + " is not an object");
    InventoryGpu info;
    RETURN_IF_ERROR(Field(g, "uuid", where, info.uuid, true));
    RETURN_IF_ERROR(Field(g, "index", where, info.index, true));
    RETURN_IF_ERROR(Field(g, "model", where, info.model, true));
    RETURN_IF_ERROR(Field(g, "memoryMiB", where, info.memory_mib, true));
    RETURN_IF_ERROR(Field(g, "sms", where, info.sms, false));
    RETURN_IF_ERROR(Field(g, "numa", where, info.numa, false));
    RETURN_IF_ERROR(Field(g, "healthy", where, info.healthy, false));
    RETURN_IF_ERROR(Field(g, "slots", where, info.slots, false));
    RETURN_IF_ERROR(Field(g, "pciBusId", where, info.pci_bus_id, false));
    RETURN_IF_ERROR(Field(g, "coresScaling", where, info.cores_scaling, false));
    RETURN_IF_ERROR(Field(g, "memoryScaling", where, info.memory_scaling, false));
    if (info.slots < 0) return InvalidArgument(where + ": \"slots\" must not be negative");
    if (!(info.cores_scaling > 0)) {
      return InvalidArgument(where + ": \"coresScaling\" must be above 0");
    }
    if (!(info.memory_scaling >= kMinMemoryScaling && info.memory_scaling <= kMaxMemoryScaling)) {
      return InvalidArgument(where + " (" + info.uuid + "): \"memoryScaling\" " +
                             MemoryScalingText(info.memory_scaling) + " is outside " +
                             MemoryScalingText(kMinMemoryScaling) + " to " +
                             MemoryScalingText(kMaxMemoryScaling));
    }
    if (info.uuid.empty()) return InvalidArgument(where + ": \"uuid\" is empty");
    if (!seen.insert(info.uuid).second) {
      return InvalidArgument(where + ": uuid " + info.uuid + " appears twice");
    }
    out.gpus.push_back(std::move(info));
  }
  return out;
}

}  // namespace tessera::annotations
