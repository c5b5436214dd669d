#include "annotations/allocation.h"

#include <algorithm>
#include <set>

#include "annotations/json_fields.h"
#include "annotations/names.h"

namespace tessera::annotations {

using internal::Field;
using nlohmann::json;

const char* ComputeModeName(ComputeMode mode) {
  return mode == ComputeMode::kHard ? "hard" : "elastic";
}

std::optional<ComputeMode> ParseComputeMode(std::string_view text) {
  if (text == "hard") return ComputeMode::kHard;
  if (text == "elastic") return ComputeMode::kElastic;
  return std::nullopt;
}

const ContainerAllocation* Allocation::Find(std::string_view name) const {
  for (const ContainerAllocation& c : containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string AllocationToJson(const Allocation& a) {
  json containers = json::array();
  for (const ContainerAllocation& c : a.containers) {
    json devices = json::array();
    for (const DeviceAllocation& d : c.devices) {
      json dev = {{"uuid", d.uuid}, {"memoryMiB", d.memory_mib}, {"cores", d.cores}};
      if (d.cores_limit > 0) dev["coresLimit"] = d.cores_limit;
      if (d.exclusive) dev["exclusive"] = true;
      devices.push_back(std::move(dev));
    }
    json container = {{"name", c.name}, {"mode", ComputeModeName(c.mode)}, {"devices", devices}};
    if (c.init) container["init"] = true;
    if (c.slot) container["slot"] = true;
    if (c.resized) container["resized"] = true;
    containers.push_back(std::move(container));
  }
  return json{{"version", 1}, {"node", a.node}, {"containers", containers}}.dump();
}

namespace {

Result<DeviceAllocation> ParseDevice(const json& d, const std::string& where) {
  if (!d.is_object()) return InvalidArgument(where + " is not an object");
  DeviceAllocation da;
  RETURN_IF_ERROR(Field(d, "uuid", where, da.uuid, true));
  RETURN_IF_ERROR(Field(d, "memoryMiB", where, da.memory_mib, true));
  RETURN_IF_ERROR(Field(d, "cores", where, da.cores, true));
  RETURN_IF_ERROR(Field(d, "coresLimit", where, da.cores_limit, false));
  RETURN_IF_ERROR(Field(d, "exclusive", where, da.exclusive, false));
  if (da.uuid.empty()) return InvalidArgument(where + ": \"uuid\" is empty");
  if (da.cores < 0 || da.cores > 100) {
    return InvalidArgument(where + ": \"cores\" " + std::to_string(da.cores) +
                           " (allowed: 0 to 100)");
  }
  // In hard mode a coresLimit means nothing (hard holds to cores), but it must still make sense.
  if (d.contains("coresLimit") &&
      (da.cores_limit < std::max(da.cores, 1) || da.cores_limit > 100)) {
    return InvalidArgument(where + ": coresLimit " + std::to_string(da.cores_limit) +
                           " (allowed: cores " + std::to_string(std::max(da.cores, 1)) +
                           " to 100)");
  }
  return da;
}

}  // namespace

Result<Allocation> ParseAllocation(std::string_view text) {
  ASSIGN_OR_RETURN(json doc, internal::ParseVersionedObject(text, kAllocation));
  Allocation a;
  RETURN_IF_ERROR(Field(doc, "node", kAllocation, a.node, true));
  if (a.node.empty()) return InvalidArgument(std::string(kAllocation) + ": \"node\" is empty");
  auto containers = doc.find("containers");
  if (containers == doc.end() || !containers->is_array()) {
    return InvalidArgument(std::string(kAllocation) + ": \"containers\" must be a list");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    std::string where = std::string(kAllocation) + " containers[" + std::to_string(i) + "]";
    if (!c.is_object()) return InvalidArgument(where + " is not an object");
    ContainerAllocation ca;
    std::string mode = "hard";
    RETURN_IF_ERROR(Field(c, "name", where, ca.name, true));
    RETURN_IF_ERROR(Field(c, "mode", where, mode, false));
    RETURN_IF_ERROR(Field(c, "init", where, ca.init, false));
    RETURN_IF_ERROR(Field(c, "slot", where, ca.slot, false));
    RETURN_IF_ERROR(Field(c, "resized", where, ca.resized, false));
    if (ca.name.empty()) return InvalidArgument(where + ": \"name\" is empty");
    if (!names.insert(ca.name).second) {
      return InvalidArgument(where + ": container " + ca.name + " appears twice");
    }
    std::optional<ComputeMode> parsed_mode = ParseComputeMode(mode);
    if (!parsed_mode) {
      return InvalidArgument(where + ": \"mode\" \"" + mode + "\" (allowed: hard, elastic)");
    }
    ca.mode = *parsed_mode;
    auto devices = c.find("devices");
    if (devices == c.end() || !devices->is_array() || devices->empty()) {
      return InvalidArgument(where + ": \"devices\" must be a non-empty list");
    }
    std::set<std::string> uuids;
    for (size_t j = 0; j < devices->size(); ++j) {
      std::string dwhere = where + " devices[" + std::to_string(j) + "]";
      ASSIGN_OR_RETURN(DeviceAllocation da, ParseDevice((*devices)[j], dwhere));
      if (!uuids.insert(da.uuid).second) {
        return InvalidArgument(dwhere + ": GPU " + da.uuid + " appears twice in one container");
      }
      ca.devices.push_back(std::move(da));
    }
    a.containers.push_back(std::move(ca));
  }
  return a;
}

}  // namespace tessera::annotations
