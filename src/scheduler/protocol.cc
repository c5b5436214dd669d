#include "scheduler/protocol.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

Result<json> ParseObject(std::string_view text, const char* what) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument(std::string(what) + " is not valid JSON");
  if (!doc.is_object()) return InvalidArgument(std::string(what) + " is not a JSON object");
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || version->get<int>() != 1) {
    return InvalidArgument(std::string(what) + ": \"version\" must be 1");
  }
  return doc;
}

template <typename T>
Status Field(const json& object, const char* key, const std::string& where, T& out, bool required) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return required ? InvalidArgument(where + ": field \"" + key + "\" is missing") : Status::Ok();
  }
  bool ok;
  if constexpr (std::is_same_v<T, std::string>) {
    ok = it->is_string();
  } else if constexpr (std::is_same_v<T, bool>) {
    ok = it->is_boolean();
  } else if constexpr (std::is_unsigned_v<T>) {
    ok = it->is_number_unsigned();
  } else {
    ok = it->is_number_integer();
  }
  if (!ok) return InvalidArgument(where + ": field \"" + key + "\" has the wrong type");
  out = it->get<T>();
  return Status::Ok();
}

}  // namespace

Result<std::vector<GpuInfo>> ParseInventory(std::string_view text, bool* serving) {
  ASSIGN_OR_RETURN(json doc, ParseObject(text, kInventoryAnnotation));
  bool is_serving = true;
  RETURN_IF_ERROR(Field(doc, "serving", kInventoryAnnotation, is_serving, false));
  auto gpus = doc.find("gpus");
  if (gpus == doc.end() || !gpus->is_array()) {
    return InvalidArgument(std::string(kInventoryAnnotation) + ": \"gpus\" must be a list");
  }
  std::vector<GpuInfo> out;
  std::set<std::string> seen;
  for (size_t i = 0; i < gpus->size(); ++i) {
    const json& g = (*gpus)[i];
    std::string where = std::string(kInventoryAnnotation) + " gpus[" + std::to_string(i) + "]";
    if (!g.is_object()) return InvalidArgument(where + " is not an object");
    GpuInfo info;
    RETURN_IF_ERROR(Field(g, "uuid", where, info.uuid, true));
    RETURN_IF_ERROR(Field(g, "index", where, info.index, true));
    RETURN_IF_ERROR(Field(g, "model", where, info.model, true));
    RETURN_IF_ERROR(Field(g, "memoryMiB", where, info.memory_mib, true));
    RETURN_IF_ERROR(Field(g, "sms", where, info.sms, false));
    RETURN_IF_ERROR(Field(g, "numa", where, info.numa, false));
    RETURN_IF_ERROR(Field(g, "healthy", where, info.healthy, false));
    RETURN_IF_ERROR(Field(g, "slots", where, info.slots, false));
    if (info.slots < 0) return InvalidArgument(where + ": \"slots\" must not be negative");
    if (info.uuid.empty()) return InvalidArgument(where + ": \"uuid\" is empty");
    if (!seen.insert(info.uuid).second) {
      return InvalidArgument(where + ": uuid " + info.uuid + " appears twice");
    }
    out.push_back(std::move(info));
  }
  if (serving) *serving = is_serving;
  return out;
}

std::string InventoryToJson(const std::vector<GpuInfo>& gpus, bool serving) {
  json list = json::array();
  for (const GpuInfo& g : gpus) {
    list.push_back({{"uuid", g.uuid},
                    {"index", g.index},
                    {"model", g.model},
                    {"memoryMiB", g.memory_mib},
                    {"sms", g.sms},
                    {"numa", g.numa},
                    {"healthy", g.healthy},
                    {"slots", g.slots}});
  }
  return json{{"version", 1}, {"serving", serving}, {"gpus", list}}.dump();
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
    containers.push_back(std::move(container));
  }
  return json{{"version", 1}, {"node", a.node}, {"containers", containers}}.dump();
}

Result<Allocation> ParseAllocation(std::string_view text) {
  ASSIGN_OR_RETURN(json doc, ParseObject(text, kAllocationAnnotation));
  Allocation a;
  RETURN_IF_ERROR(Field(doc, "node", kAllocationAnnotation, a.node, true));
  auto containers = doc.find("containers");
  if (containers == doc.end() || !containers->is_array()) {
    return InvalidArgument(std::string(kAllocationAnnotation) + ": \"containers\" must be a list");
  }
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    std::string where =
        std::string(kAllocationAnnotation) + " containers[" + std::to_string(i) + "]";
    if (!c.is_object()) return InvalidArgument(where + " is not an object");
    ContainerAllocation ca;
    std::string mode = "hard";
    RETURN_IF_ERROR(Field(c, "name", where, ca.name, true));
    RETURN_IF_ERROR(Field(c, "mode", where, mode, false));
    RETURN_IF_ERROR(Field(c, "init", where, ca.init, false));
    RETURN_IF_ERROR(Field(c, "slot", where, ca.slot, false));
    if (mode != "hard" && mode != "elastic") {
      return InvalidArgument(where + ": \"mode\" must be hard or elastic, not " + mode);
    }
    ca.mode = mode == "hard" ? ComputeMode::kHard : ComputeMode::kElastic;
    auto devices = c.find("devices");
    if (devices == c.end() || !devices->is_array()) {
      return InvalidArgument(where + ": \"devices\" must be a list");
    }
    for (size_t j = 0; j < devices->size(); ++j) {
      const json& d = (*devices)[j];
      std::string dwhere = where + " devices[" + std::to_string(j) + "]";
      if (!d.is_object()) return InvalidArgument(dwhere + " is not an object");
      DeviceAllocation da;
      RETURN_IF_ERROR(Field(d, "uuid", dwhere, da.uuid, true));
      RETURN_IF_ERROR(Field(d, "memoryMiB", dwhere, da.memory_mib, true));
      RETURN_IF_ERROR(Field(d, "cores", dwhere, da.cores, true));
      RETURN_IF_ERROR(Field(d, "coresLimit", dwhere, da.cores_limit, false));
      RETURN_IF_ERROR(Field(d, "exclusive", dwhere, da.exclusive, false));
      if (da.cores < 0 || da.cores > 100) {
        return InvalidArgument(dwhere + ": \"cores\" must be within 0..100");
      }
      ca.devices.push_back(std::move(da));
    }
    a.containers.push_back(std::move(ca));
  }
  return a;
}

std::vector<GpuCharge> ChargesOf(const Allocation& allocation) {
  struct Acc {
    GpuCharge app;
    GpuCharge init;
  };
  std::vector<Acc> acc;
  for (const ContainerAllocation& c : allocation.containers) {
    for (const DeviceAllocation& d : c.devices) {
      auto it =
          std::find_if(acc.begin(), acc.end(), [&](const Acc& a) { return a.app.uuid == d.uuid; });
      if (it == acc.end()) {
        acc.push_back({});
        it = acc.end() - 1;
        it->app.uuid = d.uuid;
      }
      if (c.init) {
        it->init.memory_mib = std::max(it->init.memory_mib, d.memory_mib);
        it->init.cores = std::max(it->init.cores, d.cores);
        it->init.slots = std::max(it->init.slots, c.slot ? 1 : 0);
        it->init.exclusive = it->init.exclusive || d.exclusive;
      } else {
        it->app.memory_mib += d.memory_mib;
        it->app.cores = std::min(100, it->app.cores + d.cores);
        it->app.slots += c.slot ? 1 : 0;
        it->app.exclusive = it->app.exclusive || d.exclusive;
      }
    }
  }
  std::vector<GpuCharge> out;
  out.reserve(acc.size());
  for (const Acc& a : acc) {
    out.push_back({a.app.uuid, std::max(a.app.memory_mib, a.init.memory_mib),
                   std::max(a.app.cores, a.init.cores), a.app.exclusive || a.init.exclusive,
                   std::max(a.app.slots, a.init.slots)});
  }
  return out;
}

}  // namespace tessera::scheduler
