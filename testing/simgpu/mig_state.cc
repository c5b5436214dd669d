#include "mig_state.h"

#include <cstdio>
#include <string>
#include <vector>

#include "common/strings.h"
#include "mig/layout.h"
#include "mig/policy.h"
#include "timeline.h"

namespace simgpu {
namespace {

namespace mig = tessera::mig;

uint64_t Fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 29);
}

// The GPU's instances as src/mig's Layout, to check a new one against the placement rules.
mig::Layout LayoutOf(const DeviceState& dev, const mig::GpuModel& model) {
  mig::Layout layout(model);
  for (const MigGpuInstance& gi : dev.gpu_instances) {
    if (!gi.live) continue;
    // The instances in the file were placed by these rules, so this cannot fail.
    (void)layout.Create(GiProfile(dev, gi), static_cast<int>(gi.start));
  }
  return layout;
}

tessera::Status NeedMig(const DeviceState& dev, int index) {
  if (MigModel(dev) == nullptr) {
    return tessera::FailedPrecondition("GPU " + std::to_string(index) + " (" + dev.model +
                                       ") does not support MIG");
  }
  if (!dev.mig_mode) {
    return tessera::FailedPrecondition("MIG mode is not enabled on GPU " + std::to_string(index));
  }
  return tessera::Status::Ok();
}

// Whether a process slot has a context or memory on MIG device (gi, ci) of `dev`; ci < 0: any of
// the GPU instance's.
bool MigDeviceUsed(const StateFile& file, int dev, int gi, int ci) {
  for (const ProcessSlot& p : file.processes) {
    uint32_t v = p.mig_instance[dev];
    if (p.pid == 0 || v == 0 || (p.contexts[dev] == 0 && p.used_bytes[dev] == 0)) continue;
    if (MigSlotGi(v) == gi && (ci < 0 || MigSlotCi(v) == ci)) return true;
  }
  return false;
}

bool HasComputeInstances(const MigGpuInstance& gi) {
  for (const MigComputeInstance& ci : gi.cis) {
    if (ci.live) return true;
  }
  return false;
}

}  // namespace

const mig::GpuModel* MigModel(const DeviceState& dev) {
  return mig::FindModel(dev.model);
}

int GpuInstanceIdFor(int start, int size) {
  switch (size) {
    case 8:
      return 0;
    case 4:
      return 1 + start / 4;
    case 2:
      return 3 + start / 2;
    default:
      return 7 + start;
  }
}

const mig::GpuInstanceProfile& GiProfile(const DeviceState& dev, const MigGpuInstance& gi) {
  return *mig::FindProfileByNvmlIndex(*MigModel(dev), static_cast<int>(gi.profile));
}

const mig::ComputeInstanceProfile& CiProfile(const mig::GpuInstanceProfile& gi,
                                             const MigComputeInstance& ci) {
  for (const mig::ComputeInstanceProfile& p : gi.compute_profiles) {
    if (p.nvml_profile == static_cast<int>(ci.profile)) return p;
  }
  return gi.compute_profiles.back();  // not reached: compute instances are made from these
}

bool DeviceInUse(SharedState& state, const SharedState::Lock& lock, int dev) {
  state.Sweep(lock, SharedState::SweepMode::kFull);
  for (const ProcessSlot& p : state.file().processes) {
    if (p.pid != 0 && (p.contexts[dev] > 0 || p.used_bytes[dev] > 0)) return true;
  }
  return false;
}

tessera::Result<MigActivation> SetMigMode(SharedState& state, const SharedState::Lock& lock,
                                          int dev, uint32_t mode) {
  DeviceState& d = state.file().devices[dev];
  if (MigModel(d) == nullptr) {
    return tessera::FailedPrecondition("GPU " + std::to_string(dev) + " (" + d.model +
                                       ") does not support MIG");
  }
  if (mode > 1) {
    return tessera::InvalidArgument("MIG mode " + std::to_string(mode) +
                                    " is neither 0 (disable) nor 1 (enable)");
  }
  d.mig_pending = mode;
  if (d.mig_mode == mode) return MigActivation::kApplied;
  bool instances = false;
  for (const MigGpuInstance& gi : d.gpu_instances) instances = instances || gi.live;
  // NVML resets an idle GPU to apply the mode; a GPU in use keeps the mode pending.
  if (DeviceInUse(state, lock, dev) || instances) return MigActivation::kInUse;
  d.mig_mode = mode;
  return MigActivation::kApplied;
}

tessera::Status ResetGpu(SharedState& state, const SharedState::Lock& lock, int dev) {
  std::vector<std::string> pids;
  state.Sweep(lock, SharedState::SweepMode::kFull);
  for (const ProcessSlot& p : state.file().processes) {
    if (p.pid != 0 && (p.contexts[dev] > 0 || p.used_bytes[dev] > 0)) {
      pids.push_back(std::to_string(p.pid));
    }
  }
  if (!pids.empty()) {
    return tessera::FailedPrecondition("GPU " + std::to_string(dev) + " is in use by processes " +
                                       tessera::Join(pids, ", ") +
                                       "; a GPU is reset only when no process uses it");
  }
  DeviceState& d = state.file().devices[dev];
  for (MigGpuInstance& gi : d.gpu_instances) gi = MigGpuInstance{};
  d.mig_mode = d.mig_pending;
  return tessera::Status::Ok();
}

tessera::Result<int> CreateGpuInstance(StateFile& file, const SharedState::Lock&, int dev,
                                       int nvml_profile, int start) {
  DeviceState& d = file.devices[dev];
  RETURN_IF_ERROR(NeedMig(d, dev));
  const mig::GpuModel& model = *MigModel(d);
  const mig::GpuInstanceProfile* profile = mig::FindProfileByNvmlIndex(model, nvml_profile);
  if (profile == nullptr) {
    return tessera::NotFound(model.name + " has no GPU instance profile with NVML index " +
                             std::to_string(nvml_profile) +
                             "; profiles: " + mig::ProfileNames(model));
  }
  mig::Layout layout = LayoutOf(d, model);
  if (start < 0) {
    std::vector<int> ranked = mig::RankedStarts(layout, *profile);
    if (ranked.empty()) {
      // CheckPlace at the first valid start says what is in the way.
      RETURN_IF_ERROR(layout.CheckPlace(*profile, profile->starts.front()));
      return tessera::ResourceExhausted("no free placement for " + profile->name);
    }
    start = ranked.front();
  }
  RETURN_IF_ERROR(layout.Create(*profile, start));
  int id = GpuInstanceIdFor(start, profile->memory_slices);
  MigGpuInstance& gi = d.gpu_instances[id];
  gi = MigGpuInstance{};
  gi.live = 1;
  gi.profile = static_cast<uint32_t>(nvml_profile);
  gi.start = static_cast<uint32_t>(start);
  gi.size = static_cast<uint32_t>(profile->memory_slices);
  return id;
}

tessera::Status DestroyGpuInstance(StateFile& file, const SharedState::Lock&, int dev, int gi) {
  DeviceState& d = file.devices[dev];
  RETURN_IF_ERROR(NeedMig(d, dev));
  if (gi < 0 || gi >= kMaxGpuInstances || !d.gpu_instances[gi].live) {
    return tessera::NotFound("GPU " + std::to_string(dev) + " has no GPU instance " +
                             std::to_string(gi));
  }
  if (HasComputeInstances(d.gpu_instances[gi])) {
    return tessera::FailedPrecondition("GPU instance " + std::to_string(gi) + " of GPU " +
                                       std::to_string(dev) +
                                       " is in use: destroy its compute instances first");
  }
  d.gpu_instances[gi] = MigGpuInstance{};
  return tessera::Status::Ok();
}

tessera::Result<int> CreateComputeInstance(StateFile& file, const SharedState::Lock&, int dev,
                                           int gi_id, int ci_profile) {
  DeviceState& d = file.devices[dev];
  RETURN_IF_ERROR(NeedMig(d, dev));
  if (gi_id < 0 || gi_id >= kMaxGpuInstances || !d.gpu_instances[gi_id].live) {
    return tessera::NotFound("GPU " + std::to_string(dev) + " has no GPU instance " +
                             std::to_string(gi_id));
  }
  MigGpuInstance& gi = d.gpu_instances[gi_id];
  const mig::GpuInstanceProfile& gp = GiProfile(d, gi);
  const mig::ComputeInstanceProfile* cp = nullptr;
  for (const mig::ComputeInstanceProfile& p : gp.compute_profiles) {
    if (p.nvml_profile == ci_profile) cp = &p;
  }
  if (cp == nullptr) {
    return tessera::NotFound("a " + gp.name + " GPU instance has no compute instance profile " +
                             std::to_string(ci_profile));
  }
  int count = 0;
  uint32_t used = 0;  // bit i: compute slice i of the GPU instance is taken
  int free_id = -1;
  for (int id = 0; id < kMaxComputeInstances; ++id) {
    const MigComputeInstance& ci = gi.cis[id];
    if (!ci.live) {
      if (free_id < 0) free_id = id;
      continue;
    }
    if (static_cast<int>(ci.profile) == ci_profile) ++count;
    used |= ((1u << ci.size) - 1u) << ci.start;
  }
  std::string name = mig::ComputeInstanceName(gp, cp->slices);
  if (count >= cp->max_instances) {
    return tessera::ResourceExhausted(name + ": at most " + std::to_string(cp->max_instances) +
                                      " in a " + gp.name + " GPU instance, " +
                                      std::to_string(count) + " in use");
  }
  int start = -1;
  for (int s = 0; s + cp->slices <= gp.compute_slices && start < 0; ++s) {
    if ((used & (((1u << cp->slices) - 1u) << s)) == 0) start = s;
  }
  if (start < 0 || free_id < 0) {
    return tessera::ResourceExhausted(name + " needs " + std::to_string(cp->slices) +
                                      " free compute slices in a row in GPU instance " +
                                      std::to_string(gi_id) + ", which has none");
  }
  gi.cis[free_id] =
      MigComputeInstance{1, static_cast<uint32_t>(ci_profile), static_cast<uint32_t>(start),
                         static_cast<uint32_t>(cp->slices)};
  // The new MIG device's SMs run its kernels on a timeline of their own, from nothing.
  ResetTimeline(d, MigSlotValue(gi_id, free_id));
  return free_id;
}

tessera::Status DestroyComputeInstance(StateFile& file, const SharedState::Lock&, int dev, int gi,
                                       int ci) {
  DeviceState& d = file.devices[dev];
  RETURN_IF_ERROR(NeedMig(d, dev));
  if (gi < 0 || gi >= kMaxGpuInstances || !d.gpu_instances[gi].live || ci < 0 ||
      ci >= kMaxComputeInstances || !d.gpu_instances[gi].cis[ci].live) {
    return tessera::NotFound("GPU " + std::to_string(dev) + " has no compute instance " +
                             std::to_string(ci) + " in GPU instance " + std::to_string(gi));
  }
  if (MigDeviceUsed(file, dev, gi, ci)) {
    return tessera::FailedPrecondition("compute instance " + std::to_string(ci) +
                                       " of GPU instance " + std::to_string(gi) + " on GPU " +
                                       std::to_string(dev) + " is in use by a process");
  }
  d.gpu_instances[gi].cis[ci] = MigComputeInstance{};
  return tessera::Status::Ok();
}

uint64_t GpuInstanceUsed(const StateFile& file, int dev, int gi) {
  uint64_t used = 0;
  for (const ProcessSlot& p : file.processes) {
    uint32_t v = p.mig_instance[dev];
    if (p.pid != 0 && v != 0 && MigSlotGi(v) == gi) used += p.used_bytes[dev];
  }
  return used;
}

std::string MigDeviceName(const DeviceState& dev, int gi, int ci) {
  const mig::GpuInstanceProfile& p = GiProfile(dev, dev.gpu_instances[gi]);
  const MigComputeInstance& c = dev.gpu_instances[gi].cis[ci];
  return std::string(dev.model) + " MIG " + mig::ComputeInstanceName(p, static_cast<int>(c.size));
}

int MigDeviceSms(const DeviceState& dev, int gi, int ci) {
  const mig::GpuInstanceProfile& p = GiProfile(dev, dev.gpu_instances[gi]);
  return CiProfile(p, dev.gpu_instances[gi].cis[ci]).sms;
}

bool MigDeviceLive(const DeviceState& dev, int gi, int ci) {
  return dev.mig_mode && MigModel(dev) != nullptr && gi >= 0 && gi < kMaxGpuInstances && ci >= 0 &&
         ci < kMaxComputeInstances && dev.gpu_instances[gi].live &&
         dev.gpu_instances[gi].cis[ci].live;
}

uint64_t GpuInstanceTotal(const DeviceState& dev, int gi) {
  return GiProfile(dev, dev.gpu_instances[gi]).memory_mib << 20;
}

int MigCapMinor(int gpu_minor, int gi, int ci) {
  constexpr int kPerGi = 1 + kMaxComputeInstances;
  return 3 + gpu_minor * kMaxGpuInstances * kPerGi + gi * kPerGi + (ci < 0 ? 0 : 1 + ci);
}

std::string MigMinorsTable(int gpus) {
  std::string out = "config 1\nmonitor 2\n";
  for (int m = 0; m < gpus; ++m) {
    for (int g = 0; g < kMaxGpuInstances; ++g) {
      std::string gi = "gpu" + std::to_string(m) + "/gi" + std::to_string(g);
      out += gi + "/access " + std::to_string(MigCapMinor(m, g, -1)) + "\n";
      for (int c = 0; c < kMaxComputeInstances; ++c) {
        out += gi + "/ci" + std::to_string(c) + "/access " + std::to_string(MigCapMinor(m, g, c)) +
               "\n";
      }
    }
  }
  return out;
}

std::string MigDeviceUuid(const DeviceState& dev, int gi, int ci) {
  std::string seed = std::string(dev.uuid) + "/" + std::to_string(gi) + "/" + std::to_string(ci);
  uint64_t a = Fnv1a(seed);
  uint64_t b = Fnv1a(seed + "#mig");
  char out[64];
  snprintf(out, sizeof(out), "MIG-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
           static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
           static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffull));
  return out;
}

}  // namespace simgpu
