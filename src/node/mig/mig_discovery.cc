#include "node/mig/mig_discovery.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace tessera::node {

Result<MigMinors> ParseMigMinors(const std::string& text) {
  MigMinors out;
  int line_number = 0;
  for (const std::string& raw : Split(text, '\n', false)) {
    ++line_number;
    const std::string_view line = Trim(raw);
    if (line.empty()) continue;
    const size_t space = line.rfind(' ');
    const std::string_view name =
        space == std::string_view::npos ? "" : Trim(line.substr(0, space));
    const std::string number(space == std::string_view::npos ? "" : line.substr(space + 1));
    const bool digits = !number.empty() && number.size() < 9 &&
                        number.find_first_not_of("0123456789") == std::string::npos;
    if (name.empty() || !digits) {
      return InvalidArgument("MIG minors line " + std::to_string(line_number) + " \"" +
                             std::string(line) +
                             "\": expected \"<name> <minor>\", like "
                             "\"gpu0/gi1/access 12\"");
    }
    out[std::string(name)] = std::stoi(number);
  }
  return out;
}

Result<MigMinors> ReadMigMinors(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read the MIG minors table " + path);
  std::stringstream text;
  text << in.rdbuf();
  Result<MigMinors> parsed = ParseMigMinors(text.str());
  if (!parsed.ok()) return parsed.status().WithContext(path);
  return parsed;
}

std::vector<std::string> MigCapsPaths(const MigMinors& minors, int gpu_minor, int gi, int ci) {
  const std::string base = "gpu" + std::to_string(gpu_minor) + "/gi" + std::to_string(gi);
  auto g = minors.find(base + "/access");
  auto c = minors.find(base + "/ci" + std::to_string(ci) + "/access");
  if (g == minors.end() || c == minors.end()) return {};
  return {"/dev/nvidia-caps/nvidia-cap" + std::to_string(g->second),
          "/dev/nvidia-caps/nvidia-cap" + std::to_string(c->second)};
}

namespace {

// "NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb" -> "1c.3g.40gb".
std::string DeviceProfileOf(const std::string& name) {
  const size_t at = name.rfind("MIG ");
  return at == std::string::npos ? name : name.substr(at + 4);
}

// "1c.3g.40gb" -> "3g.40gb"; "3g.40gb" stays.
std::string GpuInstanceProfileOf(const std::string& device_profile) {
  const size_t dot = device_profile.find('.');
  if (dot != std::string::npos && dot > 0 && device_profile[dot - 1] == 'c') {
    return device_profile.substr(dot + 1);
  }
  return device_profile;
}

// Fills `m` from the MIG device handle; false when a query failed.
bool ReadMigDevice(const NvmlLibrary& nvml, nvmlDevice_t gpu, nvmlDevice_t dev,
                   MigInstanceInfo& m) {
  bool ok = true;
  unsigned gi = 0, ci = 0;
  ok &= nvml.DeviceGetGpuInstanceId(dev, &gi) == NVML_SUCCESS;
  ok &= nvml.DeviceGetComputeInstanceId(dev, &ci) == NVML_SUCCESS;
  m.gpu_instance = static_cast<int>(gi);
  m.compute_instance = static_cast<int>(ci);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  ok &= nvml.DeviceGetUUID(dev, uuid, sizeof(uuid)) == NVML_SUCCESS;
  m.uuid = uuid;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  if (nvml.DeviceGetName(dev, name, sizeof(name)) == NVML_SUCCESS) {
    m.device_name = DeviceProfileOf(name);
    m.profile = GpuInstanceProfileOf(m.device_name);
  } else {
    ok = false;
  }
  nvmlMemory_t memory{};
  if (nvml.DeviceGetMemoryInfo(dev, &memory) == NVML_SUCCESS) {
    m.memory_mib = memory.total / (1024 * 1024);
  } else {
    ok = false;
  }
  nvmlDeviceAttributes_t attrs{};
  if (nvml.DeviceGetAttributes && nvml.DeviceGetAttributes(dev, &attrs) == NVML_SUCCESS) {
    m.sms = static_cast<int>(attrs.multiprocessorCount);
  }
  nvmlGpuInstance_t handle = nullptr;
  nvmlGpuInstanceInfo_t info{};
  if (nvml.DeviceGetGpuInstanceById(gpu, gi, &handle) == NVML_SUCCESS &&
      nvml.GpuInstanceGetInfo(handle, &info) == NVML_SUCCESS) {
    m.start = static_cast<int>(info.placement.start);
    m.size = static_cast<int>(info.placement.size);
  } else {
    ok = false;
  }
  return ok;
}

}  // namespace

Result<MigStatus> DiscoverMig(const NvmlLibrary& nvml, nvmlDevice_t device, int gpu_minor,
                              const MigMinors& minors) {
  MigStatus out;
  if (!nvml.HasMig()) return out;
  unsigned current = 0, pending = 0;
  if (nvml.DeviceGetMigMode(device, &current, &pending) != NVML_SUCCESS) return out;
  out.capable = true;
  out.enabled = current == NVML_DEVICE_MIG_ENABLE;
  out.pending = pending == NVML_DEVICE_MIG_ENABLE;
  if (!out.enabled) return out;
  unsigned most = 0;
  RETURN_IF_ERROR(
      nvml.Check(nvml.DeviceGetMaxMigDeviceCount(device, &most), "nvmlDeviceGetMaxMigDeviceCount"));
  for (unsigned i = 0; i < most; ++i) {
    nvmlDevice_t dev = nullptr;
    const nvmlReturn_t r = nvml.DeviceGetMigDeviceHandleByIndex(device, i, &dev);
    if (r == NVML_ERROR_NOT_FOUND) continue;  // fewer MIG devices than the most there can be
    RETURN_IF_ERROR(nvml.Check(r, "nvmlDeviceGetMigDeviceHandleByIndex"));
    MigInstanceInfo m;
    m.healthy = ReadMigDevice(nvml, device, dev, m);
    m.caps_paths = MigCapsPaths(minors, gpu_minor, m.gpu_instance, m.compute_instance);
    out.instances.push_back(std::move(m));
  }
  // NVML's MIG device index order is not the GPU instance order; MigStatus promises the latter.
  std::sort(out.instances.begin(), out.instances.end(),
            [](const MigInstanceInfo& a, const MigInstanceInfo& b) {
              return std::pair(a.gpu_instance, a.compute_instance) <
                     std::pair(b.gpu_instance, b.compute_instance);
            });
  return out;
}

}  // namespace tessera::node
