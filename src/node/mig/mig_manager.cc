#include "node/mig/mig_manager.h"

#include <algorithm>
#include <map>

#include "log/log.h"
#include "mig/layout_spec.h"

namespace tessera::node {

struct MigManager::Gi {
  nvmlGpuInstance_t handle = nullptr;
  int id = 0;
  const mig::GpuInstanceProfile* profile = nullptr;
  int start = 0;
  std::vector<MigInstanceInfo> devices;  // its MIG devices (compute instances)

  // "3g.40gb@4 (MIG-...)"
  std::string Name() const {
    std::string out = profile->name + "@" + std::to_string(start);
    for (size_t i = 0; i < devices.size(); ++i) {
      out += (i == 0 ? " (" : ", ") + devices[i].uuid;
    }
    return devices.empty() ? out : out + ")";
  }
};

namespace {

std::string GpuName(const GpuInfo& gpu) {
  return "GPU " + std::to_string(gpu.index) + " (" + gpu.uuid + ")";
}

Result<const mig::GpuModel*> ModelOf(const GpuInfo& gpu) {
  const mig::GpuModel* model = mig::FindModel(gpu.model);
  if (model == nullptr) {
    return FailedPrecondition(GpuName(gpu) + " is a " + gpu.model +
                              ", whose MIG profiles Tessera does not know (docs/mig.md)");
  }
  return model;
}

// The layout to make from `spec`, keeping instances already there where the spec lets them
// stay: a spec without fixed starts only asks for counts, so an existing instance of a wanted
// profile is as good as a new one (and may be in use).
mig::Layout PlanAround(const mig::GpuModel& model, const mig::LayoutSpec& spec,
                       const mig::Layout& planned, const std::vector<mig::Instance>& existing) {
  const bool fixed_starts =
      std::any_of(spec.items.begin(), spec.items.end(),
                  [](const mig::LayoutItem& item) { return item.start >= 0; });
  if (fixed_starts || existing.empty()) return planned;
  std::map<std::string, int> counts;
  for (const mig::Instance& i : planned.instances()) ++counts[i.profile];
  mig::LayoutSpec around{.kind = mig::LayoutSpec::Kind::kList, .text = spec.text};
  for (const mig::Instance& i : existing) {
    if (counts[i.profile] == 0) continue;
    --counts[i.profile];
    around.items.push_back({.profile = i.profile, .count = 1, .start = i.start});
  }
  for (const auto& [profile, count] : counts) {
    if (count > 0) around.items.push_back({.profile = profile, .count = count, .start = -1});
  }
  Result<mig::Layout> kept = mig::PlanLayout(model, around);
  return kept.ok() ? *kept : planned;
}

Status CreateFullComputeInstance(const NvmlLibrary& nvml, nvmlGpuInstance_t gi,
                                 const mig::GpuInstanceProfile& profile) {
  nvmlComputeInstanceProfileInfo_t info{};
  RETURN_IF_ERROR(
      nvml.Check(nvml.GpuInstanceGetComputeInstanceProfileInfo(
                     gi, static_cast<unsigned>(profile.compute_profiles.back().nvml_profile),
                     NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info),
                 "nvmlGpuInstanceGetComputeInstanceProfileInfo"));
  nvmlComputeInstance_t ci = nullptr;
  return nvml.Check(nvml.GpuInstanceCreateComputeInstance(gi, info.id, &ci),
                    "nvmlGpuInstanceCreateComputeInstance");
}

}  // namespace

Result<nvmlDevice_t> MigManager::Handle(const GpuInfo& gpu) const {
  nvmlDevice_t dev = nullptr;
  if (!nvml_.HasMig()) {
    return FailedPrecondition("the driver's NVML has no MIG calls, so " + GpuName(gpu) +
                              " cannot use MIG");
  }
  RETURN_IF_ERROR(
      nvml_.Check(nvml_.DeviceGetHandleByUUID(gpu.uuid.c_str(), &dev), "nvmlDeviceGetHandleByUUID")
          .WithContext(GpuName(gpu)));
  return dev;
}

Result<MigStatus> MigManager::Discover(const GpuInfo& gpu) const {
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Handle(gpu));
  unsigned minor = static_cast<unsigned>(gpu.index);
  if (nvml_.DeviceGetMinorNumber) nvml_.DeviceGetMinorNumber(dev, &minor);
  return DiscoverMig(nvml_, dev, static_cast<int>(minor), minors_);
}

Result<std::vector<MigManager::Gi>> MigManager::GpuInstances(const GpuInfo& gpu,
                                                             nvmlDevice_t dev) const {
  ASSIGN_OR_RETURN(const mig::GpuModel* model, ModelOf(gpu));
  ASSIGN_OR_RETURN(MigStatus status, Discover(gpu));
  std::vector<Gi> out;
  for (const mig::GpuInstanceProfile& p : model->profiles) {
    nvmlGpuInstanceProfileInfo_t info{};
    const nvmlReturn_t known =
        nvml_.DeviceGetGpuInstanceProfileInfo(dev, static_cast<unsigned>(p.nvml_profile), &info);
    // A profile this driver does not offer on the GPU has no instances; the others still count.
    if (known == NVML_ERROR_NOT_SUPPORTED || known == NVML_ERROR_INVALID_ARGUMENT) continue;
    RETURN_IF_ERROR(nvml_.Check(known, "nvmlDeviceGetGpuInstanceProfileInfo")
                        .WithContext(GpuName(gpu) + ", profile " + p.name));
    nvmlGpuInstance_t handles[mig::kMemorySlices] = {};
    unsigned count = 0;
    RETURN_IF_ERROR(nvml_
                        .Check(nvml_.DeviceGetGpuInstances(dev, info.id, handles, &count),
                               "nvmlDeviceGetGpuInstances")
                        .WithContext(GpuName(gpu)));
    for (unsigned i = 0; i < count && i < mig::kMemorySlices; ++i) {
      nvmlGpuInstanceInfo_t gi_info{};
      RETURN_IF_ERROR(
          nvml_.Check(nvml_.GpuInstanceGetInfo(handles[i], &gi_info), "nvmlGpuInstanceGetInfo"));
      Gi gi{.handle = handles[i],
            .id = static_cast<int>(gi_info.id),
            .profile = &p,
            .start = static_cast<int>(gi_info.placement.start),
            .devices = {}};
      for (const MigInstanceInfo& m : status.instances) {
        if (m.gpu_instance == gi.id) gi.devices.push_back(m);
      }
      out.push_back(std::move(gi));
    }
  }
  std::sort(out.begin(), out.end(), [](const Gi& a, const Gi& b) { return a.start < b.start; });
  return out;
}

Result<mig::Layout> MigManager::CurrentLayout(const GpuInfo& gpu) const {
  ASSIGN_OR_RETURN(const mig::GpuModel* model, ModelOf(gpu));
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Handle(gpu));
  ASSIGN_OR_RETURN(std::vector<Gi> gis, GpuInstances(gpu, dev));
  mig::Layout layout(*model);
  for (const Gi& gi : gis) {
    RETURN_IF_ERROR(layout.Create(*gi.profile, gi.start).WithContext(GpuName(gpu)));
  }
  return layout;
}

Result<std::string> MigManager::InUse(nvmlDevice_t dev, const Gi& gi,
                                      const std::set<std::string>& held) const {
  for (const MigInstanceInfo& m : gi.devices) {
    if (held.count(m.uuid) > 0) return "a container's allocation (" + m.uuid + ")";
  }
  if (nvml_.DeviceGetComputeRunningProcesses == nullptr) {
    return std::string("a process, perhaps: the driver cannot list its processes");
  }
  std::vector<nvmlProcessInfo_t> procs(64);
  unsigned n = static_cast<unsigned>(procs.size());
  nvmlReturn_t r = nvml_.DeviceGetComputeRunningProcesses(dev, &n, procs.data());
  if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
    procs.resize(n + 64);
    n = static_cast<unsigned>(procs.size());
    r = nvml_.DeviceGetComputeRunningProcesses(dev, &n, procs.data());
  }
  RETURN_IF_ERROR(nvml_.Check(r, "nvmlDeviceGetComputeRunningProcesses_v3"));
  std::string pids;
  for (unsigned i = 0; i < n && i < procs.size(); ++i) {
    if (procs[i].gpuInstanceId != static_cast<unsigned>(gi.id)) continue;
    pids += (pids.empty() ? "PID " : ", ") + std::to_string(procs[i].pid);
  }
  return pids;
}

Result<int> MigManager::CreateGi(nvmlDevice_t dev, const mig::GpuInstanceProfile& profile,
                                 int start) {
  nvmlGpuInstanceProfileInfo_t info{};
  RETURN_IF_ERROR(nvml_.Check(nvml_.DeviceGetGpuInstanceProfileInfo(
                                  dev, static_cast<unsigned>(profile.nvml_profile), &info),
                              "nvmlDeviceGetGpuInstanceProfileInfo"));
  const nvmlGpuInstancePlacement_t placement{static_cast<unsigned>(start),
                                             static_cast<unsigned>(profile.memory_slices)};
  nvmlGpuInstance_t gi = nullptr;
  RETURN_IF_ERROR(
      nvml_.Check(nvml_.DeviceCreateGpuInstanceWithPlacement(dev, info.id, &placement, &gi),
                  "nvmlDeviceCreateGpuInstanceWithPlacement"));
  nvmlGpuInstanceInfo_t gi_info{};
  Status s = nvml_.Check(nvml_.GpuInstanceGetInfo(gi, &gi_info), "nvmlGpuInstanceGetInfo");
  if (s.ok()) s = CreateFullComputeInstance(nvml_, gi, profile);
  if (!s.ok()) {
    nvml_.GpuInstanceDestroy(gi);  // no half-made instance stays behind
    return s;
  }
  return static_cast<int>(gi_info.id);
}

Result<bool> MigManager::DestroyGi(const GpuInfo& gpu, const Gi& gi) {
  const std::string context = GpuName(gpu) + ": destroying " + gi.Name();
  for (unsigned profile = 0; profile < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++profile) {
    nvmlComputeInstance_t cis[8] = {};
    unsigned count = 0;
    if (nvml_.GpuInstanceGetComputeInstances(gi.handle, profile, cis, &count) != NVML_SUCCESS) {
      continue;  // a profile this GPU instance cannot hold
    }
    for (unsigned i = 0; i < count && i < 8; ++i) {
      const nvmlReturn_t r = nvml_.ComputeInstanceDestroy(cis[i]);
      if (r == NVML_ERROR_IN_USE) return false;
      RETURN_IF_ERROR(nvml_.Check(r, "nvmlComputeInstanceDestroy").WithContext(context));
    }
  }
  const nvmlReturn_t r = nvml_.GpuInstanceDestroy(gi.handle);
  if (r == NVML_ERROR_IN_USE) return false;
  RETURN_IF_ERROR(nvml_.Check(r, "nvmlGpuInstanceDestroy").WithContext(context));
  return true;
}

Result<MigApplyResult> MigManager::EnsureMigMode(const GpuInfo& gpu,
                                                 const std::set<std::string>& held) {
  std::lock_guard lock(mu_);
  return EnsureMigModeLocked(gpu, held);
}

Result<MigApplyResult> MigManager::EnsureMigModeLocked(const GpuInfo& gpu,
                                                       const std::set<std::string>& held) {
  MigApplyResult out;
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Handle(gpu));
  ASSIGN_OR_RETURN(MigStatus status, Discover(gpu));
  if (!status.capable) {
    return FailedPrecondition(GpuName(gpu) + ", a " + gpu.model +
                              ": the driver does not support MIG on it");
  }
  if (status.enabled) return out;
  const std::string index = std::to_string(gpu.index);
  if (!status.pending && held.count(gpu.uuid) > 0) {
    // In MIG mode the GPU is no CUDA device: the container's share of it would stop working.
    out.left.push_back("GPU " + index +
                       " is given to a container's allocation: MIG mode not turned on until it "
                       "is free (restart the agent then)");
    return out;
  }
  if (!status.pending) {
    nvmlReturn_t activation = NVML_SUCCESS;
    RETURN_IF_ERROR(nvml_
                        .Check(nvml_.DeviceSetMigMode(dev, NVML_DEVICE_MIG_ENABLE, &activation),
                               "nvmlDeviceSetMigMode")
                        .WithContext(GpuName(gpu)));
    if (activation == NVML_SUCCESS) {
      out.done.push_back("enabled MIG mode: the configuration gives the GPU a MIG mode");
      return out;
    }
  }
  out.reset_needed = true;
  out.left.push_back(
      "MIG mode is pending: it takes effect when the GPU is reset, which the driver does only "
      "while no process uses the GPU. Stop the GPU's processes, then reset it (nvidia-smi "
      "--gpu-reset -i " +
      index + "; on simgpu: simgpu reset-gpu " + index +
      ") or reboot the node, and restart the agent to apply the configuration");
  return out;
}

Result<MigApplyResult> MigManager::ApplyFixed(const GpuInfo& gpu, const MigSetting& setting,
                                              const std::set<std::string>& held) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(std::optional<mig::Layout> planned, CheckMigSetting(setting, gpu));
  if (!planned) {
    return InvalidArgument(GpuName(gpu) + ": MIG mode " + MigModeName(setting.mode) +
                           " has no layout to apply");
  }
  ASSIGN_OR_RETURN(MigApplyResult out, EnsureMigModeLocked(gpu, held));
  if (!out.left.empty()) return out;  // MIG mode is not on
  if (Status s = ApplyLayoutLocked(gpu, setting, *planned, held, out); !s.ok()) {
    for (const std::string& line : out.done) {
      log::Info("MIG change", {{"gpu", std::to_string(gpu.index)}, {"what", line}});
    }
    return s;
  }
  return out;
}

Status MigManager::ApplyLayoutLocked(const GpuInfo& gpu, const MigSetting& setting,
                                     const mig::Layout& planned, const std::set<std::string>& held,
                                     MigApplyResult& out) {
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Handle(gpu));
  ASSIGN_OR_RETURN(std::vector<Gi> gis, GpuInstances(gpu, dev));
  std::vector<mig::Instance> existing;
  for (const Gi& gi : gis)
    existing.push_back({gi.profile->name, gi.start, gi.profile->memory_slices});
  const mig::Layout want = PlanAround(planned.model(), setting.spec, planned, existing);
  const std::string layout_text = "the layout \"" + setting.layout + "\" (" + want.ToString() + ")";
  auto wanted = [&](const std::string& profile, int start) {
    return std::any_of(
        want.instances().begin(), want.instances().end(),
        [&](const mig::Instance& i) { return i.profile == profile && i.start == start; });
  };
  mig::Layout now(want.model());
  for (const Gi& gi : gis) {
    if (wanted(gi.profile->name, gi.start)) {
      if (gi.devices.empty()) {
        RETURN_IF_ERROR(
            CreateFullComputeInstance(nvml_, gi.handle, *gi.profile).WithContext(GpuName(gpu)));
        out.done.push_back("created the compute instance of " + gi.Name() +
                           ", which had none: a GPU instance is usable only through one");
      }
      RETURN_IF_ERROR(now.Create(*gi.profile, gi.start));
      continue;
    }
    ASSIGN_OR_RETURN(std::string user, InUse(dev, gi, held));
    if (!user.empty()) {
      out.left.push_back(gi.Name() + " is not in " + layout_text + ", but " + user +
                         " uses it: left alone until it is free");
      RETURN_IF_ERROR(now.Create(*gi.profile, gi.start));
      continue;
    }
    ASSIGN_OR_RETURN(bool destroyed, DestroyGi(gpu, gi));
    if (!destroyed) {  // a process started on it after the check
      out.left.push_back(gi.Name() + " is not in " + layout_text +
                         ", but the driver found a process on it when destroying it: left alone "
                         "until it is free");
      RETURN_IF_ERROR(now.Create(*gi.profile, gi.start));
      continue;
    }
    out.done.push_back("destroyed " + gi.Name() + ": not in " + layout_text);
  }
  for (const mig::Instance& w : want.instances()) {
    const bool there = std::any_of(now.instances().begin(), now.instances().end(),
                                   [&](const mig::Instance& i) { return i == w; });
    if (there) continue;
    ASSIGN_OR_RETURN(const mig::GpuInstanceProfile* profile,
                     mig::FindProfile(want.model(), w.profile));
    const std::string name = w.profile + "@" + std::to_string(w.start);
    if (Status s = now.CheckPlace(*profile, w.start); !s.ok()) {
      out.left.push_back("cannot create " + name + " of " + layout_text + " now: " + s.message());
      continue;
    }
    RETURN_IF_ERROR(
        CreateGi(dev, *profile, w.start).status().WithContext(GpuName(gpu) + ": creating " + name));
    RETURN_IF_ERROR(now.Create(*profile, w.start));
    out.done.push_back("created " + name + ": in " + layout_text);
  }
  return Status::Ok();
}

Result<MigInstanceInfo> MigManager::CreateLocked(const GpuInfo& gpu,
                                                 const mig::GpuInstanceProfile& profile,
                                                 int start) {
  ASSIGN_OR_RETURN(MigStatus status, Discover(gpu));
  if (!status.enabled) {
    return FailedPrecondition(GpuName(gpu) +
                              ": MIG mode is not on, so no MIG instance can be "
                              "created (node.mig.mode dynamic turns it on at the agent's start)");
  }
  ASSIGN_OR_RETURN(mig::Layout layout, CurrentLayout(gpu));
  RETURN_IF_ERROR(layout.CheckPlace(profile, start).WithContext(GpuName(gpu)));
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Handle(gpu));
  ASSIGN_OR_RETURN(int id, CreateGi(dev, profile, start));
  ASSIGN_OR_RETURN(MigStatus after, Discover(gpu));
  for (const MigInstanceInfo& m : after.instances) {
    if (m.gpu_instance == id) {
      log::Info("created a MIG instance", {{"gpu", std::to_string(gpu.index)},
                                           {"instance", profile.name + "@" + std::to_string(start)},
                                           {"uuid", m.uuid}});
      return m;
    }
  }
  return Internal(GpuName(gpu) + ": the GPU instance " + profile.name + "@" +
                  std::to_string(start) + " was created but has no MIG device");
}

Result<MigInstanceInfo> MigManager::Create(const GpuInfo& gpu, const std::string& profile,
                                           int start) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(const mig::GpuModel* model, ModelOf(gpu));
  ASSIGN_OR_RETURN(const mig::GpuInstanceProfile* p, mig::FindProfile(*model, profile));
  return CreateLocked(gpu, *p, start);
}

Result<MigInstanceInfo> MigManager::CreateFor(const GpuInfo& gpu, const mig::Request& request) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(mig::Layout layout, CurrentLayout(gpu));
  ASSIGN_OR_RETURN(mig::Choice choice, mig::Choose(layout, request));
  return CreateLocked(gpu, *choice.profile, choice.start);
}

Status MigManager::Destroy(const GpuInfo& gpu, const std::string& uuid,
                           const std::set<std::string>& held) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Handle(gpu));
  ASSIGN_OR_RETURN(std::vector<Gi> gis, GpuInstances(gpu, dev));
  std::string there;
  for (const Gi& gi : gis) {
    const bool match = std::any_of(gi.devices.begin(), gi.devices.end(),
                                   [&](const MigInstanceInfo& m) { return m.uuid == uuid; });
    there += (there.empty() ? "" : ", ") + gi.Name();
    if (!match) continue;
    ASSIGN_OR_RETURN(std::string user, InUse(dev, gi, held));
    if (!user.empty()) {
      return FailedPrecondition(GpuName(gpu) + ": " + gi.Name() + " is in use by " + user +
                                ": not destroyed");
    }
    ASSIGN_OR_RETURN(bool destroyed, DestroyGi(gpu, gi));
    if (!destroyed) {
      return FailedPrecondition(GpuName(gpu) + ": " + gi.Name() +
                                " is in use by a process the driver found when destroying it: "
                                "not destroyed");
    }
    log::Info("destroyed a MIG instance", {{"gpu", std::to_string(gpu.index)},
                                           {"instance", gi.Name()},
                                           {"why", "its last user is gone"}});
    return Status::Ok();
  }
  return NotFound(GpuName(gpu) + " has no MIG device " + uuid +
                  "; its instances: " + (there.empty() ? "none" : there));
}

Result<std::vector<std::string>> MigManager::DestroyUnused(const GpuInfo& gpu,
                                                           const std::set<std::string>& held) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(nvmlDevice_t dev, Handle(gpu));
  ASSIGN_OR_RETURN(std::vector<Gi> gis, GpuInstances(gpu, dev));
  std::vector<std::string> out;
  for (const Gi& gi : gis) {
    ASSIGN_OR_RETURN(std::string user, InUse(dev, gi, held));
    if (!user.empty()) continue;
    ASSIGN_OR_RETURN(bool destroyed, DestroyGi(gpu, gi));
    if (destroyed) out.push_back(gi.Name());  // else a process started on it: it stays
  }
  return out;
}

Status ApplyMigConfig(MigManager& manager, const MigConfig& config,
                      const std::vector<GpuInfo>& gpus, const std::set<std::string>& held) {
  RETURN_IF_ERROR(CheckMigConfig(config, gpus));
  for (const GpuInfo& g : gpus) {
    const MigSetting& setting = config.For(g);
    if (setting.mode == MigMode::kNone) continue;
    Result<MigApplyResult> r = setting.mode == MigMode::kFixed
                                   ? manager.ApplyFixed(g, setting, held)
                                   : manager.EnsureMigMode(g, held);
    if (!r.ok()) return r.status();
    const std::string index = std::to_string(g.index);
    for (const std::string& line : r->done) {
      log::Info("MIG change",
                {{"gpu", index}, {"mode", MigModeName(setting.mode)}, {"what", line}});
    }
    for (const std::string& line : r->left) {
      log::Warn("MIG change not made",
                {{"gpu", index}, {"mode", MigModeName(setting.mode)}, {"why", line}});
    }
    if (r->done.empty() && r->complete()) {
      log::Info("MIG already as configured", {{"gpu", index}, {"mode", MigModeName(setting.mode)}});
    }
  }
  return Status::Ok();
}

}  // namespace tessera::node
