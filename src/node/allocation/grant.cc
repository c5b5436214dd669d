#include "node/allocation/grant.h"

namespace tessera::node {

using nlohmann::json;

Result<std::optional<Grant>> GrantFromAllocation(const std::string& annotation,
                                                 const std::string& container,
                                                 const std::string& node) {
  json doc = json::parse(annotation, nullptr, /*allow_exceptions=*/false);
  auto bad = [](const std::string& what) {
    return InvalidArgument(std::string(kAllocationAnnotation) + ": " + what);
  };
  if (!doc.is_object()) return bad("not a JSON object");
  if (doc.value("version", 0) != 1) return bad("version must be 1");
  if (doc.contains("node") && doc["node"].is_string() && doc["node"] != node) {
    return bad("the decision is for node " + doc["node"].get<std::string>() + ", this is " + node);
  }
  const json* containers = doc.contains("containers") ? &doc["containers"] : nullptr;
  if (containers == nullptr || !containers->is_array()) return bad("containers must be a list");
  for (const json& c : *containers) {
    if (!c.is_object() || c.value("name", "") != container) continue;
    Grant g;
    g.mode = c.value("mode", "hard");
    if (g.mode != "hard" && g.mode != "elastic") {
      return bad("container " + container + ": mode \"" + g.mode + "\" (allowed: hard, elastic)");
    }
    if (!c.contains("devices") || !c["devices"].is_array() || c["devices"].empty()) {
      return bad("container " + container + ": devices must be a non-empty list");
    }
    for (const json& d : c["devices"]) {
      if (!d.is_object() || !d.contains("uuid") || !d["uuid"].is_string()) {
        return bad("container " + container + ": every device needs a uuid");
      }
      GrantDevice gd;
      gd.uuid = d["uuid"].get<std::string>();
      if (d.contains("memoryMiB") && d["memoryMiB"].is_number_unsigned()) {
        gd.memory_mib = d["memoryMiB"].get<uint64_t>();
      }
      if (d.contains("cores") && d["cores"].is_number_integer()) gd.cores = d["cores"].get<int>();
      if (gd.cores < 0 || gd.cores > 100) {
        return bad("container " + container + ": cores " + std::to_string(gd.cores) +
                   " (allowed: 0 to 100)");
      }
      if (d.contains("coresLimit") && d["coresLimit"].is_number_integer()) {
        gd.cores_limit = d["coresLimit"].get<int>();
        if (gd.cores_limit < gd.cores || gd.cores_limit > 100) {
          return bad("container " + container + ": coresLimit " + std::to_string(gd.cores_limit) +
                     " (allowed: cores " + std::to_string(gd.cores) + " to 100)");
        }
      }
      g.devices.push_back(gd);
    }
    return std::optional<Grant>(g);
  }
  return std::optional<Grant>();
}

}  // namespace tessera::node
