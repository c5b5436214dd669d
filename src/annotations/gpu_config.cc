#include "annotations/gpu_config.h"

#include <algorithm>
#include <string>

namespace tessera::annotations {

using nlohmann::json;

json GpuConfigToJson(const GpuConfig& config) {
  json parameters = {{"apiVersion", kGpuConfigApiVersion},
                     {"kind", kGpuConfigKind},
                     {"computeMode", ComputeModeName(config.mode)}};
  if (config.cores_limit > 0) parameters["coresLimit"] = config.cores_limit;
  return parameters;
}

Result<GpuConfig> ParseGpuConfig(const json& parameters) {
  if (!parameters.is_object()) return InvalidArgument("its parameters are not an object");
  auto text = [&](const char* key) {
    auto it = parameters.find(key);
    return it != parameters.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (text("apiVersion") != kGpuConfigApiVersion || text("kind") != kGpuConfigKind) {
    return InvalidArgument(std::string("its parameters must have apiVersion ") +
                           kGpuConfigApiVersion + " and kind " + kGpuConfigKind + ", not " +
                           parameters.value("apiVersion", json()).dump() + " and " +
                           parameters.value("kind", json()).dump());
  }
  GpuConfig config;
  for (const auto& [key, value] : parameters.items()) {
    if (key == "apiVersion" || key == "kind") continue;
    if (key == "computeMode") {
      std::optional<ComputeMode> mode =
          value.is_string() ? ParseComputeMode(value.get<std::string>()) : std::nullopt;
      if (!mode) {
        return InvalidArgument("computeMode " + value.dump() +
                               ": expected \"hard\" or \"elastic\"");
      }
      config.mode = *mode;
    } else if (key == "coresLimit") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 100) {
        return InvalidArgument("coresLimit " + value.dump() +
                               ": expected a whole percent, 1 to 100");
      }
      config.cores_limit = value.get<int>();
    } else {
      return InvalidArgument("unknown field \"" + key +
                             "\" (a GpuConfig has apiVersion, kind, computeMode, coresLimit)");
    }
  }
  if (config.cores_limit != 0 && config.mode != ComputeMode::kElastic) {
    return InvalidArgument("coresLimit applies to computeMode elastic only");
  }
  return config;
}

Result<GpuConfig> GpuConfigOfEntries(const json& entries, const std::set<std::string>& requests) {
  GpuConfig config;
  if (!entries.is_array()) return config;
  size_t index = 0;
  for (const json& entry : entries) {
    const std::string where = "config[" + std::to_string(index++) + "]";
    if (!entry.is_object()) continue;
    const json opaque = entry.value("opaque", json::object());
    if (!opaque.is_object() || opaque.value("driver", json()) != kGpuConfigDriver) continue;
    const json named = entry.value("requests", json::array());
    if (named.is_array() && !named.empty()) {
      std::set<std::string> covered;
      for (const json& r : named) {
        if (r.is_string())
          covered.insert(r.get<std::string>().substr(0, r.get<std::string>().find('/')));
      }
      if (!std::includes(covered.begin(), covered.end(), requests.begin(), requests.end())) {
        return InvalidArgument(where + " applies to some of the claim's requests only: a claim " +
                               "has one compute mode, give the GpuConfig to all of them");
      }
    }
    Result<GpuConfig> parsed = ParseGpuConfig(opaque.value("parameters", json()));
    if (!parsed.ok()) {
      return InvalidArgument(where + " (" + kGpuConfigKind + "): " + parsed.status().message());
    }
    config = *parsed;
  }
  return config;
}

}  // namespace tessera::annotations
