#include "annotations/allocated.h"

#include "annotations/json_fields.h"
#include "annotations/names.h"

namespace tessera::annotations {

using internal::Field;
using nlohmann::json;

std::string AllocatedToJson(const Allocated& allocated) {
  json out = json::object();
  for (const auto& [container, record] : allocated) {
    out[container] = {{"allocation", record.allocation}, {"devices", record.devices}};
  }
  return out.dump();
}

Result<Allocated> ParseAllocated(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument(std::string(kAllocated) + " is not valid JSON");
  if (!doc.is_object()) return InvalidArgument(std::string(kAllocated) + " is not a JSON object");
  Allocated out;
  for (const auto& [container, value] : doc.items()) {
    std::string where = std::string(kAllocated) + " container " + container;
    if (!value.is_object()) return InvalidArgument(where + " is not an object");
    AllocatedContainer record;
    RETURN_IF_ERROR(Field(value, "allocation", where, record.allocation, true));
    auto devices = value.find("devices");
    if (devices != value.end() && !devices->is_null()) {
      if (!devices->is_array()) return InvalidArgument(where + ": \"devices\" must be a list");
      for (const json& d : *devices) {
        if (!d.is_string()) return InvalidArgument(where + ": \"devices\" must hold GPU UUIDs");
        record.devices.push_back(d.get<std::string>());
      }
    }
    out.emplace(container, std::move(record));
  }
  return out;
}

}  // namespace tessera::annotations
