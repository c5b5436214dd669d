#include "visible_devices.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "common/strings.h"
#include "mig_state.h"

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

bool InMigMode(const DeviceState& d) {
  return d.mig_mode != 0 && MigModel(d) != nullptr;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Whether the process may use MIG device (gi, ci) of GPU `minor`: both capability nodes exist
// under `dev_root` (always, without one).
bool MigAccessible(const char* dev_root, int minor, int gi, int ci) {
  if (dev_root == nullptr) return true;
  std::string caps = std::string(dev_root) + "/dev/nvidia-caps/nvidia-cap";
  return Exists(caps + std::to_string(MigCapMinor(minor, gi, -1))) &&
         Exists(caps + std::to_string(MigCapMinor(minor, gi, ci)));
}

// The MIG devices of the present GPUs in MIG mode that the process may use, in order (GPU, GPU
// instance id, compute instance id).
std::vector<CudaDevice> MigDevices(const StateFile& state, const std::vector<int>& present,
                                   const char* dev_root) {
  std::vector<CudaDevice> out;
  for (int i : present) {
    const DeviceState& d = state.devices[i];
    if (!InMigMode(d)) continue;
    for (int g = 0; g < kMaxGpuInstances; ++g) {
      if (!d.gpu_instances[g].live) continue;
      for (int c = 0; c < kMaxComputeInstances; ++c) {
        if (d.gpu_instances[g].cis[c].live && MigAccessible(dev_root, i, g, c)) {
          out.push_back({i, g, c});
        }
      }
    }
  }
  return out;
}

// The MIG device an entry names ("MIG-<uuid prefix>" or "MIG-GPU-<uuid>/<gi>/<ci>", lower case),
// or {-1}.
CudaDevice FindMig(const std::string& entry, const StateFile& state,
                   const std::vector<int>& present, const char* dev_root) {
  CudaDevice found{-1};
  std::vector<CudaDevice> all = MigDevices(state, present, dev_root);
  if (tessera::StartsWith(entry, "mig-gpu-")) {
    std::vector<std::string> parts = tessera::Split(entry.substr(4), '/', false);
    if (parts.size() != 3) return found;
    for (const CudaDevice& m : all) {
      if (tessera::ToLower(state.devices[m.device].uuid) == parts[0] &&
          parts[1] == std::to_string(m.gi) && parts[2] == std::to_string(m.ci)) {
        return m;
      }
    }
    return found;
  }
  for (const CudaDevice& m : all) {
    std::string uuid = tessera::ToLower(MigDeviceUuid(state.devices[m.device], m.gi, m.ci));
    if (!tessera::StartsWith(uuid, entry)) continue;
    if (found.device >= 0) return CudaDevice{-1};  // ambiguous prefix
    found = m;
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

std::vector<CudaDevice> VisibleDevices(const char* cuda_visible_devices, const StateFile& state,
                                       const std::vector<int>& present, const char* dev_root) {
  std::vector<CudaDevice> out;
  bool have_mig = false;
  if (cuda_visible_devices == nullptr) {
    std::vector<CudaDevice> migs = MigDevices(state, present, dev_root);
    for (int i : present) {
      if (!InMigMode(state.devices[i])) {
        out.push_back({i});
        continue;
      }
      for (const CudaDevice& m : migs) {
        if (m.device == i && !have_mig) {
          out.push_back(m);
          have_mig = true;
        }
      }
    }
    return out;
  }
  for (const std::string& raw : tessera::Split(cuda_visible_devices, ',', false)) {
    std::string entry = tessera::ToLower(tessera::Trim(raw));
    CudaDevice device{-1};
    if (tessera::StartsWith(entry, "mig-")) {
      device = FindMig(entry, state, present, dev_root);
      if (device.device < 0) break;
      if (have_mig) continue;  // the driver uses the first MIG device named
      have_mig = true;
    } else if (!entry.empty() && std::all_of(entry.begin(), entry.end(), ::isdigit)) {
      int ordinal = entry.size() < 4 ? std::stoi(entry) : -1;
      if (ordinal >= 0 && ordinal < static_cast<int>(present.size()))
        device.device = present[ordinal];
    } else if (!entry.empty()) {
      device.device = FindByUuid(entry, state, present);
    }
    if (device.device < 0 || std::find(out.begin(), out.end(), device) != out.end()) break;
    if (device.gi < 0 && InMigMode(state.devices[device.device])) continue;  // not a CUDA device
    out.push_back(device);
  }
  return out;
}

}  // namespace simgpu
