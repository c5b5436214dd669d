#include "scheduler/claim_admission.h"

#include <set>
#include <vector>

#include "annotations/gpu_config.h"
#include "common/json_text.h"
#include "common/quantity.h"

namespace tessera::scheduler {

using nlohmann::json;

namespace {

// One request, or one subrequest of firstAvailable, whose DeviceClass is the driver's.
struct DriverRequest {
  std::string request;  // the request's name (the base name of a subrequest)
  std::string where;    // how the denial names it: "gpu" or "gpu/small"
  const json* body;     // the ExactDeviceRequest or DeviceSubRequest
};

std::vector<DriverRequest> DriverRequests(const json& spec) {
  std::vector<DriverRequest> out;
  const json::json_pointer at("/devices/requests");
  if (!spec.is_object() || !spec.contains(at) || !spec.at(at).is_array()) return out;
  for (const json& r : spec.at(at)) {
    const std::string name = TextOf(r, "name");
    if (!r.is_object()) continue;
    auto exactly = r.find("exactly");
    if (exactly != r.end() &&
        TextOf(*exactly, "deviceClassName") == annotations::kGpuConfigDriver) {
      out.push_back({name, name, &*exactly});
    }
    auto first = r.find("firstAvailable");
    if (first == r.end() || !first->is_array()) continue;
    for (const json& sub : *first) {
      if (TextOf(sub, "deviceClassName") == annotations::kGpuConfigDriver) {
        out.push_back({name, name + "/" + TextOf(sub, "name"), &sub});
      }
    }
  }
  return out;
}

bool AdminAccess(const json& body) {
  auto it = body.find("adminAccess");
  return it != body.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

std::string ClaimSpecDenial(const json& spec) {
  const std::vector<DriverRequest> requests = DriverRequests(spec);
  std::set<std::string> names, admin, tenant;
  for (const DriverRequest& r : requests) {
    names.insert(r.request);
    (AdminAccess(*r.body) ? admin : tenant).insert(r.where);
  }
  if (!admin.empty() && !tenant.empty()) {
    return "requests " + *admin.begin() + " (adminAccess) and " + *tenant.begin() +
           " (without) in one claim: the driver " + annotations::kGpuConfigDriver +
           " prepares a claim either for administrative access (device nodes, no limits) or "
           "with limits; use two claims";
  }
  const json::json_pointer at("/devices/config");
  Result<annotations::GpuConfig> config = annotations::GpuConfigOfEntries(
      spec.is_object() && spec.contains(at) ? spec.at(at) : json::array(), names);
  if (!config.ok()) return "spec.devices." + config.status().message();
  if (config->mode != annotations::ComputeMode::kElastic || !admin.empty()) return "";
  for (const DriverRequest& r : requests) {
    const json::json_pointer cores("/capacity/requests/cores");
    Result<int64_t> value = r.body->contains(cores) ? ParseWholeQuantity(r.body->at(cores))
                                                    : Result<int64_t>(int64_t{0});
    if (!value.ok() || *value < 1 || *value > 99) {
      return "request " + r.where + ": computeMode elastic needs capacity.requests.cores " +
             "between 1 and 99 (the share it is held to under contention), it has " +
             (r.body->contains(cores) ? r.body->at(cores).dump() : std::string("none"));
    }
  }
  return "";
}

}  // namespace tessera::scheduler
