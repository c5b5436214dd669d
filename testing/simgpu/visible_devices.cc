#include "visible_devices.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "common/strings.h"

namespace simgpu {
namespace {

int FindByUuid(const std::string& entry, const StateFile& state, const std::vector<int>& present) {
  std::string want = tessera::ToLower(entry);
  if (!tessera::StartsWith(want, "gpu-")) want = "gpu-" + want;
  int found = -1;
  for (int i : present) {
    std::string uuid = tessera::ToLower(state.devices[i].uuid);
    if (!tessera::StartsWith(uuid, want)) continue;
    if (found >= 0) return -1;  // ambiguous prefix
    found = i;
  }
  return found;
}

}  // namespace

std::vector<int> PresentDevices(const char* dev_root, const StateFile& state) {
  std::vector<int> out;
  for (uint32_t i = 0; i < state.device_count; ++i) {
    if (dev_root != nullptr) {
      std::string node = std::string(dev_root) + "/dev/nvidia" + std::to_string(i);
      struct stat st {};
      if (::stat(node.c_str(), &st) != 0) continue;
    }
    out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<int> VisibleDevices(const char* cuda_visible_devices, const StateFile& state,
                                const std::vector<int>& present) {
  if (cuda_visible_devices == nullptr) return present;
  std::vector<int> out;
  for (const std::string& raw : tessera::Split(cuda_visible_devices, ',', false)) {
    std::string entry(tessera::Trim(raw));
    int index = -1;
    if (!entry.empty() && std::all_of(entry.begin(), entry.end(), ::isdigit)) {
      int ordinal = entry.size() < 4 ? std::stoi(entry) : -1;
      if (ordinal >= 0 && ordinal < static_cast<int>(present.size())) index = present[ordinal];
    } else if (!entry.empty()) {
      index = FindByUuid(entry, state, present);
    }
    if (index < 0 || std::find(out.begin(), out.end(), index) != out.end()) break;
    out.push_back(index);
  }
  return out;
}

}  // namespace simgpu
