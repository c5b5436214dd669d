#include "node/dra/claim_grant.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "annotations/gpu_config.h"
#include "common/json_text.h"
#include "common/quantity.h"

namespace tessera::node::dra {

using nlohmann::json;

std::string DeviceName(int gpu_index) {
  return "gpu-" + std::to_string(gpu_index);
}

namespace {

// The GPU named `device` ("gpu-<index>"), or nullptr.
const GpuInfo* GpuOfDevice(const std::string& device, const std::vector<GpuInfo>& gpus) {
  if (device.rfind("gpu-", 0) != 0 || device.size() == 4) return nullptr;
  char* end = nullptr;
  long index = std::strtol(device.c_str() + 4, &end, 10);
  if (*end != '\0' || DeviceName(static_cast<int>(index)) != device) return nullptr;
  auto it =
      std::find_if(gpus.begin(), gpus.end(), [&](const GpuInfo& g) { return g.index == index; });
  return it == gpus.end() ? nullptr : &*it;
}

// The consumed capacity `name` of a result as a whole number (a Kubernetes quantity).
Result<std::optional<uint64_t>> Consumed(const json& result, const char* name) {
  auto capacity = result.find("consumedCapacity");
  if (capacity == result.end() || !capacity->is_object() || !capacity->contains(name)) {
    return std::optional<uint64_t>();
  }
  const json& value = (*capacity)[name];
  Result<int64_t> parsed = ParseWholeQuantity(value);
  if (!parsed.ok()) {
    return InvalidArgument("consumedCapacity." + std::string(name) + " " + value.dump() +
                           " is not a whole quantity: " + parsed.status().message());
  }
  return std::optional<uint64_t>(static_cast<uint64_t>(*parsed));
}

}  // namespace

Result<ClaimGrant> GrantOfClaim(const json& claim, const ClaimRef& ref, const std::string& pool,
                                const std::vector<GpuInfo>& gpus) {
  const std::string what = "ResourceClaim " + ref.ns + "/" + ref.name;
  const json meta = claim.value("metadata", json::object());
  if (TextOf(meta, "uid") != ref.uid) {
    return FailedPrecondition(what + " has uid " + TextOf(meta, "uid") + ", kubelet asked for " +
                              ref.uid + " (the claim was deleted and created again)");
  }
  const json::json_pointer results_at("/status/allocation/devices/results");
  if (!claim.contains(json::json_pointer("/status/allocation"))) {
    return FailedPrecondition(what + " is not allocated (no status.allocation)");
  }
  const json results = claim.contains(results_at) ? claim.at(results_at) : json::array();
  ClaimGrant out;
  std::set<std::string> whole;          // GPUs given whole
  std::set<std::string> admin, tenant;  // requests with and without adminAccess
  for (const json& r : results) {
    if (TextOf(r, "driver") != kDriverName) continue;
    const std::string device = TextOf(r, "device"), request = TextOf(r, "request");
    const auto flag = r.find("adminAccess");
    const bool admin_access = flag != r.end() && flag->is_boolean() && flag->get<bool>();
    (admin_access ? admin : tenant).insert(request);
    if (TextOf(r, "pool") != pool) {
      return FailedPrecondition(what + ": device " + device + " is allocated from pool \"" +
                                TextOf(r, "pool") + "\", this node's pool is \"" + pool + "\"");
    }
    const GpuInfo* gpu = GpuOfDevice(device, gpus);
    if (gpu == nullptr) {
      return NotFound(what + ": device \"" + device + "\" is not on node " + pool +
                      " (its devices are gpu-<index> of its " + std::to_string(gpus.size()) +
                      " GPUs)");
    }
    if (gpu->mig.enabled) {
      return FailedPrecondition(what + ": device " + device + " (" + gpu->uuid +
                                ") is in MIG mode: it is no CUDA device, and this driver "
                                "publishes no MIG devices");
    }
    if (!gpu->healthy && !admin_access) {
      return FailedPrecondition(what + ": device " + device + " (" + gpu->uuid + ") is unhealthy");
    }
    // Administrative access takes none of the GPU (the scheduler lets it beside tenants): no
    // memory figure (the whole GPU, no limit) and no cores.
    Result<std::optional<uint64_t>> memory =
        admin_access ? std::optional<uint64_t>() : Consumed(r, "memory");
    Result<std::optional<uint64_t>> cores =
        admin_access ? std::optional<uint64_t>() : Consumed(r, "cores");
    for (const Status& s : {memory.status(), cores.status()}) {
      if (!s.ok()) return InvalidArgument(what + ": device " + device + ": " + s.message());
    }
    auto same = std::find_if(out.grant.devices.begin(), out.grant.devices.end(),
                             [&](const GrantDevice& d) { return d.uuid == gpu->uuid; });
    if (same == out.grant.devices.end()) {
      out.grant.devices.push_back({gpu->uuid, 0, 0, 0});
      same = out.grant.devices.end() - 1;
    }
    // A result without a memory figure has the whole GPU, and so has the claim (0 = no limit).
    if (!*memory) whole.insert(gpu->uuid);
    same->memory_mib = whole.count(gpu->uuid) ? 0 : same->memory_mib + **memory / (1024 * 1024);
    same->cores = static_cast<int>(std::min<uint64_t>(100, same->cores + cores->value_or(0)));
    if (same->memory_mib > gpu->virtual_memory_mib()) {
      return InvalidArgument(what + ": device " + device + " is given " +
                             std::to_string(same->memory_mib) + " MiB, the GPU has " +
                             MemoryText(*gpu));
    }
    std::optional<std::string> share;
    if (r.contains("shareID") && r["shareID"].is_string()) share = r["shareID"].get<std::string>();
    // kubelet matches a container's claim request to the base name ("gpu-0" of "gpu-0/small").
    out.devices.push_back({{request.substr(0, request.find('/'))}, pool, device, share});
  }
  if (out.devices.empty()) {
    return FailedPrecondition(what + " has no device of driver " + kDriverName);
  }
  if (!admin.empty() && !tenant.empty()) {
    auto names = [](const std::set<std::string>& set) {
      std::string list;
      for (const std::string& n : set) list += (list.empty() ? "" : ", ") + n;
      return list;
    };
    return FailedPrecondition(what + ": requests " + names(admin) + " have adminAccess and " +
                              names(tenant) +
                              " do not; a claim is prepared either for administrative access "
                              "(device nodes, no limits) or with limits: use two claims");
  }
  if (!admin.empty()) {
    out.admin_access = true;
    return out;  // no compute mode: nothing is limited
  }
  std::set<std::string> requests;
  for (const PreparedDevice& d : out.devices) requests.insert(d.requests.begin(), d.requests.end());
  const json::json_pointer config_at("/status/allocation/devices/config");
  Result<annotations::GpuConfig> config = annotations::GpuConfigOfEntries(
      claim.contains(config_at) ? claim.at(config_at) : json::array(), requests);
  if (!config.ok()) return InvalidArgument(what + ": " + config.status().message());
  out.grant.mode = annotations::ComputeModeName(config->mode);
  for (GrantDevice& d : out.grant.devices) {
    if (config->mode == annotations::ComputeMode::kHard) break;
    if (d.cores == 0 || d.cores == 100) {
      return InvalidArgument(what + ": computeMode elastic needs a share of the GPU's cores " +
                             "(capacity.requests.cores between 1 and 99) on " + d.uuid +
                             ", it has " + std::to_string(d.cores));
    }
    d.cores_limit = config->cores_limit;
  }
  return out;
}

}  // namespace tessera::node::dra
