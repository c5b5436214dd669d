#include "node/kubelet/resources.h"

#include <charconv>

namespace tessera::node {

const GpuInfo* FindGpu(const std::vector<GpuInfo>& gpus, const std::string& uuid) {
  for (const GpuInfo& g : gpus) {
    if (g.uuid == uuid) return &g;
  }
  return nullptr;
}

int UnitsPerGpu(const ResourceSpec& spec, const GpuInfo& gpu, int split_count) {
  switch (spec.kind) {
    case ResourceKind::kVgpuSlots:
      return split_count;
    case ResourceKind::kVcudaCore:
      return 100;
    case ResourceKind::kVcudaMemory:
      return static_cast<int>(gpu.virtual_memory_mib() / 256);
    case ResourceKind::kGpuMemGiB:
      return static_cast<int>(gpu.virtual_memory_mib() / 1024);
  }
  return 0;
}

std::vector<DeviceUnit> DeviceUnits(const ResourceSpec& spec, const std::vector<GpuInfo>& gpus,
                                    int split_count) {
  std::vector<DeviceUnit> out;
  for (const GpuInfo& g : gpus) {
    int n = UnitsPerGpu(spec, g, split_count);
    std::string prefix = std::to_string(g.index) + "-";
    for (int u = 0; u < n; ++u) out.push_back({prefix + std::to_string(u), g.index});
  }
  return out;
}

std::optional<int> GpuIndexOfDevice(const std::string& id) {
  size_t dash = id.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == id.size()) return std::nullopt;
  int index = 0;
  auto [p, ec] = std::from_chars(id.data(), id.data() + dash, index);
  if (ec != std::errc() || p != id.data() + dash) return std::nullopt;
  int unit = 0;
  auto [q, ec2] = std::from_chars(id.data() + dash + 1, id.data() + id.size(), unit);
  if (ec2 != std::errc() || q != id.data() + id.size()) return std::nullopt;
  return index;
}

std::string SocketName(const std::string& resource) {
  std::string out = "tessera-";
  for (char c : resource) out += (c == '/') ? '-' : c;
  return out + ".sock";
}

}  // namespace tessera::node
