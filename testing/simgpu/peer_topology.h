// Which simulated devices reach each other's memory directly (SIMGPU_DEVICES peers=), as a real
// machine's topology decides: an NVSwitch box (HGX) links every GPU by NVLink, a PCIe server lets
// its GPUs reach each other over PCIe, a workstation with P2P disabled lets none.
//
//   peers=pcie                 every pair over PCIe (the default)
//   peers=none                 no pair
//   peers=nvlink               every pair by NVLink
//   peers=nvlink:0-3/4-7       NVLink within each group of devices (ranges of physical indices);
//                              pairs across groups over PCIe
//
// Thread-compatible: plain values.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "state_layout.h"

namespace simgpu {

struct PeerTopology {
  bool pcie = true;  // pairs outside an NVLink group reach each other over PCIe
  bool nvlink_all = false;
  std::vector<std::pair<int, int>> nvlink_groups;  // inclusive ranges of physical indices

  // The group number (1, 2, ...) of device `index`, 0 when it is in none.
  uint32_t GroupOf(int index, int device_count) const;
  // "pcie", "none", "nvlink" or "nvlink:A-B/C-D".
  std::string Canonical() const;
};

// Parses peers='s value; `device_count` bounds the groups' indices (checked by Validate).
tessera::Result<PeerTopology> ParsePeerTopology(std::string_view value);

// Whether the groups name devices the machine has and do not overlap.
tessera::Status ValidatePeerTopology(const PeerTopology& t, int device_count);

// Whether device `a` reaches device `b`'s memory directly, and whether by NVLink (a != b), from
// the state file's copy of the topology.
bool PeerAccess(const StateFile& f, int a, int b);
bool NvlinkPeers(const StateFile& f, int a, int b);

// Whether device `device` supports multicast objects: it is in an NVLink group (an NVSwitch
// system's NVLink SHARP), and the multicast team's devices must all be of its group.
bool MulticastSupported(const StateFile& f, int device);

}  // namespace simgpu
