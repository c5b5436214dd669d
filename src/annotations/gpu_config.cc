#include "annotations/gpu_config.h"

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

}  // namespace tessera::annotations
