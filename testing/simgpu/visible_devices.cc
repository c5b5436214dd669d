#include "visible_devices.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "common/strings.h"

namespace simgpu {
namespace {

int FindByUuid(const std::string& entry, const StateFile& state) {
  std::string want = tessera::ToLower(entry);
  if (!tessera::StartsWith(want, "gpu-")) want = "gpu-" + want;
  int found = -1;
  for (uint32_t i = 0; i < state.device_count; ++i) {
    std::string uuid = tessera::ToLower(state.devices[i].uuid);
    if (!tessera::StartsWith(uuid, want)) continue;
    if (found >= 0) return -1;  // ambiguous prefix
    found = static_cast<int>(i);
  }
  return found;
}

}  // namespace

std::vector<int> VisibleDevices(const char* cuda_visible_devices, const StateFile& state) {
  std::vector<int> out;
  if (cuda_visible_devices == nullptr) {
    for (uint32_t i = 0; i < state.device_count; ++i) out.push_back(static_cast<int>(i));
    return out;
  }
  for (const std::string& raw : tessera::Split(cuda_visible_devices, ',', false)) {
    std::string entry(tessera::Trim(raw));
    int index = -1;
    if (!entry.empty() && std::all_of(entry.begin(), entry.end(), ::isdigit)) {
      if (entry.size() < 4) index = std::stoi(entry);
      if (index >= static_cast<int>(state.device_count)) index = -1;
    } else if (!entry.empty()) {
      index = FindByUuid(entry, state);
    }
    if (index < 0 || std::find(out.begin(), out.end(), index) != out.end()) break;
    out.push_back(index);
  }
  return out;
}

}  // namespace simgpu
