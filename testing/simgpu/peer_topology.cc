#include "peer_topology.h"

#include <charconv>

#include "common/strings.h"

namespace simgpu {

namespace {

constexpr const char* kForms =
    "'pcie' (every pair over PCIe), 'none', 'nvlink' (every pair by NVLink) or 'nvlink:A-B/C-D' "
    "(NVLink within each range of device indices, PCIe across them)";

bool ParseIndex(std::string_view text, int* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out >= 0;
}

}  // namespace

uint32_t PeerTopology::GroupOf(int index, int device_count) const {
  if (nvlink_all) return index < device_count ? 1 : 0;
  for (size_t g = 0; g < nvlink_groups.size(); ++g) {
    if (index >= nvlink_groups[g].first && index <= nvlink_groups[g].second) {
      return static_cast<uint32_t>(g + 1);
    }
  }
  return 0;
}

std::string PeerTopology::Canonical() const {
  if (nvlink_all) return "nvlink";
  if (nvlink_groups.empty()) return pcie ? "pcie" : "none";
  std::string out = "nvlink:";
  for (size_t g = 0; g < nvlink_groups.size(); ++g) {
    if (g > 0) out += "/";
    out += std::to_string(nvlink_groups[g].first) + "-" + std::to_string(nvlink_groups[g].second);
  }
  return out;
}

tessera::Result<PeerTopology> ParsePeerTopology(std::string_view value) {
  PeerTopology t;
  std::string word = tessera::ToLower(tessera::Trim(value));
  if (word == "pcie") return t;
  if (word == "none") {
    t.pcie = false;
    return t;
  }
  if (word == "nvlink") {
    t.nvlink_all = true;
    return t;
  }
  if (word.rfind("nvlink:", 0) != 0) {
    return tessera::InvalidArgument("SIMGPU_DEVICES: peers=" + std::string(value) + " is not " +
                                    kForms);
  }
  for (const std::string& group : tessera::Split(word.substr(7), '/', false)) {
    size_t dash = group.find('-');
    int first = 0, last = 0;
    bool ok = dash != std::string::npos &&
              ParseIndex(std::string_view(group).substr(0, dash), &first) &&
              ParseIndex(std::string_view(group).substr(dash + 1), &last) && first < last;
    if (!ok) {
      return tessera::InvalidArgument("SIMGPU_DEVICES: peers=" + std::string(value) + ": group '" +
                                      group + "' is not A-B with A < B; peers takes " + kForms);
    }
    t.nvlink_groups.emplace_back(first, last);
  }
  return t;
}

tessera::Status ValidatePeerTopology(const PeerTopology& t, int device_count) {
  std::vector<bool> taken(static_cast<size_t>(device_count), false);
  for (const auto& [first, last] : t.nvlink_groups) {
    if (last >= device_count) {
      return tessera::InvalidArgument("SIMGPU_DEVICES: peers= names device " +
                                      std::to_string(last) + ", but the machine has " +
                                      std::to_string(device_count) + " (indices from 0)");
    }
    for (int i = first; i <= last; ++i) {
      if (taken[static_cast<size_t>(i)]) {
        return tessera::InvalidArgument("SIMGPU_DEVICES: peers= puts device " + std::to_string(i) +
                                        " in two NVLink groups");
      }
      taken[static_cast<size_t>(i)] = true;
    }
  }
  return tessera::Status::Ok();
}

bool NvlinkPeers(const StateFile& f, int a, int b) {
  uint32_t ga = f.devices[a].nvlink_group;
  return a != b && ga != 0 && ga == f.devices[b].nvlink_group;
}

bool MulticastSupported(const StateFile& f, int device) {
  return f.devices[device].nvlink_group != 0;
}

bool PeerAccess(const StateFile& f, int a, int b) {
  return a != b && (NvlinkPeers(f, a, b) || f.pcie_peers != 0);
}

}  // namespace simgpu
