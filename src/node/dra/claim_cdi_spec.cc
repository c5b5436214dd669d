#include "node/dra/claim_cdi_spec.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace tessera::node::dra {

using nlohmann::json;

std::string ClaimDeviceCdiId(const std::string& claim_uid, const std::string& device) {
  return std::string(kCdiClaimKind) + "=" + claim_uid + "-" + device;
}

namespace {

json NodesJson(std::vector<DeviceNode>::const_iterator first,
               std::vector<DeviceNode>::const_iterator last, bool rooted) {
  json out = json::array();
  for (auto n = first; n != last; ++n) {
    json entry = {{"path", n->container_path}};
    if (rooted) entry["hostPath"] = n->host_path;
    out.push_back(entry);
  }
  return out;
}

}  // namespace

Result<std::string> ClaimCdiSpecText(const std::string& uid, const ClaimGrant& claim,
                                     const std::vector<GpuInfo>& gpus,
                                     const std::string& driver_root,
                                     const std::vector<MountSpec>& mounts) {
  std::vector<std::string> uuids, names;
  for (const GrantDevice& d : claim.grant.devices) uuids.push_back(d.uuid);
  for (const PreparedDevice& d : claim.devices) {
    if (std::find(names.begin(), names.end(), d.device) == names.end()) names.push_back(d.device);
  }
  if (names.size() != uuids.size()) {
    return FailedPrecondition("claim " + uid + " has " + std::to_string(names.size()) +
                              " devices and " + std::to_string(uuids.size()) + " GPUs");
  }
  // The GPUs' nodes in the order of `uuids`, then the driver's control nodes.
  ASSIGN_OR_RETURN(std::vector<DeviceNode> nodes, DeviceNodesOf(uuids, gpus, driver_root));
  const bool rooted =
      !driver_root.empty() && driver_root.find_first_not_of('/') != std::string::npos;
  const auto controls = nodes.begin() + static_cast<std::ptrdiff_t>(uuids.size());

  json devices = json::array();
  for (size_t i = 0; i < uuids.size(); ++i) {
    const std::string name = uid + "-" + names[i];
    const auto gpu = nodes.begin() + static_cast<std::ptrdiff_t>(i);
    devices.push_back(
        {{"name", name}, {"containerEdits", {{"deviceNodes", NodesJson(gpu, gpu + 1, rooted)}}}});
  }
  devices.push_back(
      {{"name", uid},
       {"containerEdits", {{"deviceNodes", NodesJson(nodes.begin(), controls, rooted)}}}});

  json edits = {{"deviceNodes", NodesJson(controls, nodes.end(), rooted)}};
  if (!mounts.empty()) {
    json list = json::array();
    for (const MountSpec& m : mounts) {
      list.push_back({{"hostPath", m.host_path},
                      {"containerPath", m.container_path},
                      {"options", {m.read_only ? "ro" : "rw", "nosuid", "nodev", "bind"}}});
    }
    edits["mounts"] = list;
  }
  json spec = {{"cdiVersion", "0.6.0"},
               {"kind", kCdiClaimKind},
               {"containerEdits", edits},
               {"devices", devices}};
  return spec.dump(2) + "\n";
}

}  // namespace tessera::node::dra
