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

namespace {

json MigToJson(const InventoryMig& mig) {
  json instances = json::array();
  for (const InventoryMigInstance& m : mig.instances) {
    json item = {{"uuid", m.uuid},      {"profile", m.profile},      {"start", m.start},
                 {"size", m.size},      {"memoryMiB", m.memory_mib}, {"sms", m.sms},
                 {"healthy", m.healthy}};
    if (!m.device.empty()) item["device"] = m.device;
    instances.push_back(std::move(item));
  }
  return {{"mode", mig.mode},
          {"enabled", mig.enabled},
          {"pending", mig.pending},
          {"instances", instances}};
}

Result<InventoryMig> ParseMig(const json& doc, const std::string& where,
                              std::set<std::string>& seen) {
  if (!doc.is_object()) return InvalidArgument(where + ": \"mig\" is not an object");
  InventoryMig out;
  RETURN_IF_ERROR(Field(doc, "mode", where + " mig", out.mode, false));
  if (out.mode != "none" && out.mode != "fixed" && out.mode != "dynamic") {
    return InvalidArgument(where + " mig: \"mode\" \"" + out.mode +
                           "\" is not one of none, fixed, dynamic");
  }
  RETURN_IF_ERROR(Field(doc, "enabled", where + " mig", out.enabled, false));
  RETURN_IF_ERROR(Field(doc, "pending", where + " mig", out.pending, false));
  auto instances = doc.find("instances");
  if (instances == doc.end() || instances->is_null()) return out;
  if (!instances->is_array()) {
    return InvalidArgument(where + " mig: \"instances\" must be a list");
  }
  for (size_t i = 0; i < instances->size(); ++i) {
    const json& item = (*instances)[i];
    const std::string at = where + " mig.instances[" + std::to_string(i) + "]";
    if (!item.is_object()) return InvalidArgument(at + " is not an object");
    InventoryMigInstance m;
    RETURN_IF_ERROR(Field(item, "uuid", at, m.uuid, true));
    RETURN_IF_ERROR(Field(item, "profile", at, m.profile, true));
    RETURN_IF_ERROR(Field(item, "device", at, m.device, false));
    RETURN_IF_ERROR(Field(item, "start", at, m.start, false));
    RETURN_IF_ERROR(Field(item, "size", at, m.size, false));
    RETURN_IF_ERROR(Field(item, "memoryMiB", at, m.memory_mib, false));
    RETURN_IF_ERROR(Field(item, "sms", at, m.sms, false));
    RETURN_IF_ERROR(Field(item, "healthy", at, m.healthy, false));
    if (m.uuid.empty()) return InvalidArgument(at + ": \"uuid\" is empty");
    if (m.profile.empty()) return InvalidArgument(at + ": \"profile\" is empty");
    if (m.start < 0 || m.size < 0 || m.start + m.size > 8) {
      return InvalidArgument(at + " (" + m.uuid + "): placement start " + std::to_string(m.start) +
                             " size " + std::to_string(m.size) +
                             " is outside the GPU's memory slices 0-7");
    }
    if (!seen.insert(m.uuid).second) {
      return InvalidArgument(at + ": uuid " + m.uuid + " appears twice");
    }
    out.instances.push_back(std::move(m));
  }
  return out;
}

}  // namespace

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
    if (g.mig) gpu["mig"] = MigToJson(*g.mig);
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
    if (auto mig = g.find("mig"); mig != g.end() && !mig->is_null()) {
      ASSIGN_OR_RETURN(info.mig, ParseMig(*mig, where, seen));
    }
    out.gpus.push_back(std::move(info));
  }
  return out;
}

}  // namespace tessera::annotations
