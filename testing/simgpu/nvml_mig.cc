// NVML: MIG mode, GPU instances, compute instances and MIG devices (nvml_mig.h, mig_state.h).
#include "nvml_mig.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/strings.h"
#include "mig/layout.h"
#include "mig_state.h"
#include "nvml_handles.h"

using namespace simgpu;
namespace mig = tessera::mig;

namespace {

struct GiHandle {
  int index;
  int gi;
};
struct CiHandle {
  int index;
  int gi;
  int ci;
};

// One object per possible instance; built once (function-local statics are thread-safe).
struct Handles {
  GiHandle gis[kMaxDevices][kMaxGpuInstances];
  CiHandle cis[kMaxDevices][kMaxGpuInstances][kMaxComputeInstances];
  CiHandle mig_devices[kMaxDevices][kMaxGpuInstances][kMaxComputeInstances];
  Handles() {
    for (int d = 0; d < kMaxDevices; ++d) {
      for (int g = 0; g < kMaxGpuInstances; ++g) {
        gis[d][g] = {d, g};
        for (int c = 0; c < kMaxComputeInstances; ++c) {
          cis[d][g][c] = {d, g, c};
          mig_devices[d][g][c] = {d, g, c};
        }
      }
    }
  }
};

Handles& AllHandles() {
  static Handles handles;
  return handles;
}

nvmlGpuInstance_t GiHandleOf(int index, int gi) {
  return reinterpret_cast<nvmlGpuInstance_t>(&AllHandles().gis[index][gi]);
}
nvmlComputeInstance_t CiHandleOf(int index, int gi, int ci) {
  return reinterpret_cast<nvmlComputeInstance_t>(&AllHandles().cis[index][gi][ci]);
}
nvmlDevice_t MigHandleOf(int index, int gi, int ci) {
  return reinterpret_cast<nvmlDevice_t>(&AllHandles().mig_devices[index][gi][ci]);
}

template <typename T, size_t N>
bool Within(const void* p, const T (&array)[N]) {
  auto* first = reinterpret_cast<const char*>(&array);
  auto* at = static_cast<const char*>(p);
  return at >= first && at < first + sizeof(array);
}

// NVML's answer to a mig_state.h error.
nvmlReturn_t ToNvml(const tessera::Status& status) {
  switch (status.code()) {
    case tessera::StatusCode::kOk:
      return NVML_SUCCESS;
    case tessera::StatusCode::kInvalidArgument:
    case tessera::StatusCode::kNotFound:
      return NVML_ERROR_INVALID_ARGUMENT;
    case tessera::StatusCode::kResourceExhausted:
      return NVML_ERROR_INSUFFICIENT_RESOURCES;
    case tessera::StatusCode::kFailedPrecondition:
      return NVML_ERROR_NOT_SUPPORTED;
    default:
      return NVML_ERROR_UNKNOWN;
  }
}

// The GPU of `device` with a MIG table: NVML_ERROR_NOT_SUPPORTED when its model has none.
nvmlReturn_t ResolveMigGpu(nvmlDevice_t device, SharedState** s, int* index) {
  if (nvmlReturn_t r = NvmlResolve(device, s, index); r != NVML_SUCCESS) return r;
  if (MigModel((*s)->file().devices[*index]) == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

// As ResolveMigGpu, and MIG mode on.
nvmlReturn_t ResolveMigEnabled(nvmlDevice_t device, SharedState** s, int* index) {
  if (nvmlReturn_t r = ResolveMigGpu(device, s, index); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(**s);
  return (*s)->file().devices[*index].mig_mode ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

// A GPU instance handle whose instance exists, with the state locked by the caller afterwards.
nvmlReturn_t ResolveGi(nvmlGpuInstance_t handle, SharedState** s, int* index, int* gi) {
  SharedState* state = NvmlState();
  if (state == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (handle == nullptr || !Within(handle, AllHandles().gis)) return NVML_ERROR_INVALID_ARGUMENT;
  auto* h = reinterpret_cast<const GiHandle*>(handle);
  if (h->index >= state->device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(*state);
  const DeviceState& d = state->file().devices[h->index];
  if (d.removed) return NVML_ERROR_GPU_IS_LOST;
  if (!d.mig_mode || !d.gpu_instances[h->gi].live) return NVML_ERROR_INVALID_ARGUMENT;
  *s = state;
  *index = h->index;
  *gi = h->gi;
  return NVML_SUCCESS;
}

nvmlReturn_t ResolveCi(nvmlComputeInstance_t handle, SharedState** s, int* index, int* gi,
                       int* ci) {
  SharedState* state = NvmlState();
  if (state == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (handle == nullptr || !Within(handle, AllHandles().cis)) return NVML_ERROR_INVALID_ARGUMENT;
  auto* h = reinterpret_cast<const CiHandle*>(handle);
  if (h->index >= state->device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(*state);
  const DeviceState& d = state->file().devices[h->index];
  if (d.removed) return NVML_ERROR_GPU_IS_LOST;
  if (!d.mig_mode || !d.gpu_instances[h->gi].live || !d.gpu_instances[h->gi].cis[h->ci].live) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *s = state;
  *index = h->index;
  *gi = h->gi;
  *ci = h->ci;
  return NVML_SUCCESS;
}

const mig::GpuInstanceProfile* ProfileById(const mig::GpuModel& model, unsigned profile_id) {
  for (const mig::GpuInstanceProfile& p : model.profiles) {
    if (p.profile_id == static_cast<int>(profile_id)) return &p;
  }
  return nullptr;
}

// The fields shared by every version of nvmlGpuInstanceProfileInfo.
struct GiInfo {
  unsigned id, slices, instances, sms, ce, dec, enc, jpg, ofa;
  unsigned long long memory_mb;
  std::string name;
};

GiInfo GiInfoOf(const mig::GpuInstanceProfile& p) {
  return GiInfo{static_cast<unsigned>(p.profile_id),
                static_cast<unsigned>(p.compute_slices),
                static_cast<unsigned>(p.max_instances),
                static_cast<unsigned>(p.sms),
                static_cast<unsigned>(p.copy_engines),
                static_cast<unsigned>(p.decoders),
                static_cast<unsigned>(p.encoders),
                static_cast<unsigned>(p.jpeg),
                static_cast<unsigned>(p.ofa),
                p.memory_mib,
                "MIG " + p.name};
}

// The profile with NVML index `profile` of a MIG GPU: NOT_SUPPORTED when the model lacks it,
// INVALID_ARGUMENT for an index past NVML's profiles.
nvmlReturn_t ProfileByIndex(nvmlDevice_t device, unsigned profile,
                            const mig::GpuInstanceProfile** out) {
  SharedState* s;
  int i;
  if (nvmlReturn_t r = ResolveMigGpu(device, &s, &i); r != NVML_SUCCESS) return r;
  if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
  *out = mig::FindProfileByNvmlIndex(*MigModel(s->file().devices[i]), static_cast<int>(profile));
  return *out != nullptr ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t CreateGi(nvmlDevice_t device, unsigned profile_id, int start, nvmlGpuInstance_t* out) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = ResolveMigEnabled(device, &s, &i); r != NVML_SUCCESS) return r;
  const mig::GpuInstanceProfile* p = ProfileById(*MigModel(s->file().devices[i]), profile_id);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(*s);
  tessera::Result<int> id = CreateGpuInstance(s->file(), lock, i, p->nvml_profile, start);
  if (!id.ok()) return ToNvml(id.status());
  *out = GiHandleOf(i, *id);
  return NVML_SUCCESS;
}

// The live MIG devices of GPU `index` in NVML's index order: GPU instance id, then compute
// instance id.
std::vector<std::pair<int, int>> MigDevicesOf(const DeviceState& d) {
  std::vector<std::pair<int, int>> out;
  if (!d.mig_mode) return out;
  for (int g = 0; g < kMaxGpuInstances; ++g) {
    if (!d.gpu_instances[g].live) continue;
    for (int c = 0; c < kMaxComputeInstances; ++c) {
      if (d.gpu_instances[g].cis[c].live) out.emplace_back(g, c);
    }
  }
  return out;
}

}  // namespace

namespace simgpu {

bool IsNvmlMigHandle(nvmlDevice_t device) {
  return device != nullptr && Within(device, AllHandles().mig_devices);
}

nvmlReturn_t NvmlResolveMig(nvmlDevice_t device, SharedState** state, int* index, int* gi,
                            int* ci) {
  SharedState* s = NvmlState();
  if (s == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (!IsNvmlMigHandle(device)) return NVML_ERROR_INVALID_ARGUMENT;
  auto* h = reinterpret_cast<const CiHandle*>(device);
  if (h->index >= s->device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(*s);
  const DeviceState& d = s->file().devices[h->index];
  if (d.removed) return NVML_ERROR_GPU_IS_LOST;
  if (!d.mig_mode || !d.gpu_instances[h->gi].live || !d.gpu_instances[h->gi].cis[h->ci].live) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *state = s;
  *index = h->index;
  *gi = h->gi;
  *ci = h->ci;
  return NVML_SUCCESS;
}

nvmlReturn_t NvmlResolveOutsideMig(nvmlDevice_t device, SharedState** state, int* index) {
  if (IsNvmlMigHandle(device)) {
    int gi, ci;
    nvmlReturn_t r = NvmlResolveMig(device, state, index, &gi, &ci);
    return r == NVML_SUCCESS ? NVML_ERROR_NOT_SUPPORTED : r;
  }
  if (nvmlReturn_t r = NvmlResolve(device, state, index); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(**state);
  return (*state)->file().devices[*index].mig_mode != 0 ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

nvmlReturn_t NvmlResolveAny(nvmlDevice_t device, SharedState** state, int* index, uint32_t* mig) {
  if (!IsNvmlMigHandle(device)) {
    *mig = 0;
    return NvmlResolve(device, state, index);
  }
  int gi, ci;
  if (nvmlReturn_t r = NvmlResolveMig(device, state, index, &gi, &ci); r != NVML_SUCCESS) return r;
  *mig = MigSlotValue(gi, ci);
  return NVML_SUCCESS;
}

void MigDeviceMemory(const StateFile& file, int dev, int gi, nvmlMemory_t* memory) {
  uint64_t total = GpuInstanceTotal(file.devices[dev], gi);
  memory->total = total;
  memory->used = std::min(GpuInstanceUsed(file, dev, gi), total);
  memory->free = total - memory->used;
}

void MigDeviceAttributes(const DeviceState& dev, int gi, int ci, nvmlDeviceAttributes_t* out) {
  const MigGpuInstance& g = dev.gpu_instances[gi];
  const mig::GpuInstanceProfile& p = GiProfile(dev, g);
  const mig::ComputeInstanceProfile& c = CiProfile(p, g.cis[ci]);
  memset(out, 0, sizeof(*out));
  out->multiprocessorCount = static_cast<unsigned>(c.sms);
  out->sharedCopyEngineCount = static_cast<unsigned>(p.copy_engines);
  out->sharedDecoderCount = static_cast<unsigned>(p.decoders);
  out->sharedEncoderCount = static_cast<unsigned>(p.encoders);
  out->sharedJpegCount = static_cast<unsigned>(p.jpeg);
  out->sharedOfaCount = static_cast<unsigned>(p.ofa);
  out->gpuInstanceSliceCount = static_cast<unsigned>(p.compute_slices);
  out->computeInstanceSliceCount = static_cast<unsigned>(c.slices);
  out->memorySizeMB = p.memory_mib;
}

nvmlDevice_t FindMigDeviceByUuid(const StateFile& file, const std::vector<int>& present,
                                 const std::string& uuid) {
  std::string want = tessera::ToLower(uuid);
  for (int i : present) {
    const DeviceState& d = file.devices[i];
    for (auto [g, c] : MigDevicesOf(d)) {
      if (tessera::ToLower(MigDeviceUuid(d, g, c)) == want) return MigHandleOf(i, g, c);
    }
  }
  return nullptr;
}

}  // namespace simgpu

extern "C" {

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                  unsigned int* pendingMode) {
  if (currentMode == nullptr || pendingMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = ResolveMigGpu(device, &s, &i); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  *currentMode = s->file().devices[i].mig_mode;
  *pendingMode = s->file().devices[i].mig_pending;
  return NVML_SUCCESS;
}

// The mode takes effect at once when nothing uses the GPU (NVML resets it); otherwise it stays
// pending, *activationStatus is NVML_ERROR_IN_USE, and `simgpu reset-gpu` applies it.
nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t* activationStatus) {
  if (activationStatus == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (mode != NVML_DEVICE_MIG_DISABLE && mode != NVML_DEVICE_MIG_ENABLE) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  SharedState* s;
  int i;
  if (nvmlReturn_t r = ResolveMigGpu(device, &s, &i); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  tessera::Result<MigActivation> done = SetMigMode(*s, lock, i, mode);
  if (!done.ok()) return ToNvml(done.status());
  *activationStatus = *done == MigActivation::kApplied ? NVML_SUCCESS : NVML_ERROR_IN_USE;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const mig::GpuInstanceProfile* p;
  if (nvmlReturn_t r = ProfileByIndex(device, profile, &p); r != NVML_SUCCESS) return r;
  GiInfo g = GiInfoOf(*p);
  *info = nvmlGpuInstanceProfileInfo_t{g.id,  0,     g.slices, g.instances, g.sms,      g.ce,
                                       g.dec, g.enc, g.jpg,    g.ofa,       g.memory_mb};
  return NVML_SUCCESS;
}

// Version 2 or 3 of the struct, as info->version says.
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned version = info->version;
  if (version != nvmlGpuInstanceProfileInfo_v2 && version != nvmlGpuInstanceProfileInfo_v3) {
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  const mig::GpuInstanceProfile* p;
  if (nvmlReturn_t r = ProfileByIndex(device, profile, &p); r != NVML_SUCCESS) return r;
  GiInfo g = GiInfoOf(*p);
  if (version == nvmlGpuInstanceProfileInfo_v2) {
    nvmlGpuInstanceProfileInfo_v2_t out{};
    out = {version, g.id,  0,     g.slices, g.instances, g.sms, g.ce,
           g.dec,   g.enc, g.jpg, g.ofa,    g.memory_mb, {}};
    snprintf(out.name, sizeof(out.name), "%s", g.name.c_str());
    *info = out;
    return NVML_SUCCESS;
  }
  nvmlGpuInstanceProfileInfo_v3_t out{};
  out = {version, g.id,  g.slices, g.instances, g.sms, g.ce, g.dec,
         g.enc,   g.jpg, g.ofa,    g.memory_mb, {},    0};
  snprintf(out.name, sizeof(out.name), "%s", g.name.c_str());
  memcpy(static_cast<void*>(info), &out, sizeof(out));
  return NVML_SUCCESS;
}

// Every valid placement of the profile, whether MIG is on or not and whatever is in use.
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t* placements,
                                                           unsigned int* count) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = ResolveMigGpu(device, &s, &i); r != NVML_SUCCESS) return r;
  const mig::GpuInstanceProfile* p = ProfileById(*MigModel(s->file().devices[i]), profileId);
  if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  if (placements == nullptr) {
    *count = static_cast<unsigned>(p->starts.size());
    return NVML_SUCCESS;
  }
  if (*count < p->starts.size()) {
    *count = static_cast<unsigned>(p->starts.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t k = 0; k < p->starts.size(); ++k) {
    placements[k] = {static_cast<unsigned>(p->starts[k]), static_cast<unsigned>(p->memory_slices)};
  }
  *count = static_cast<unsigned>(p->starts.size());
  return NVML_SUCCESS;
}

#undef nvmlDeviceGetGpuInstancePossiblePlacements
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements(nvmlDevice_t device, unsigned int profileId,
                                                        nvmlGpuInstancePlacement_t* placements,
                                                        unsigned int* count) {
  return nvmlDeviceGetGpuInstancePossiblePlacements_v2(device, profileId, placements, count);
}

// Without a placement, simgpu puts the instance where src/mig's placement policy would.
nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                         nvmlGpuInstance_t* gpuInstance) {
  return CreateGi(device, profileId, -1, gpuInstance);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t* placement,
                                                      nvmlGpuInstance_t* gpuInstance) {
  if (placement == nullptr || placement->start >= 8) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = ResolveMigGpu(device, &s, &i); r != NVML_SUCCESS) return r;
  const mig::GpuInstanceProfile* p = ProfileById(*MigModel(s->file().devices[i]), profileId);
  if (p != nullptr && placement->size != static_cast<unsigned>(p->memory_slices)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return CreateGi(device, profileId, static_cast<int>(placement->start), gpuInstance);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  SharedState* s;
  int i, gi;
  if (nvmlReturn_t r = ResolveGi(gpuInstance, &s, &i, &gi); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  // The handle resolved, so MIG is on: FailedPrecondition is its compute instances.
  tessera::Status done = DestroyGpuInstance(s->file(), lock, i, gi);
  if (done.code() == tessera::StatusCode::kFailedPrecondition) return NVML_ERROR_IN_USE;
  return ToNvml(done);
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances, unsigned int* count) {
  if (gpuInstances == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = ResolveMigEnabled(device, &s, &i); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  const DeviceState& d = s->file().devices[i];
  const mig::GpuInstanceProfile* p = ProfileById(*MigModel(d), profileId);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned n = 0;
  for (int g = 0; g < kMaxGpuInstances; ++g) {
    if (d.gpu_instances[g].live &&
        d.gpu_instances[g].profile == static_cast<unsigned>(p->nvml_profile)) {
      gpuInstances[n++] = GiHandleOf(i, g);
    }
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t* gpuInstance) {
  if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = ResolveMigEnabled(device, &s, &i); r != NVML_SUCCESS) return r;
  if (id >= static_cast<unsigned>(kMaxGpuInstances)) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(*s);
  if (!s->file().devices[i].gpu_instances[id].live) return NVML_ERROR_NOT_FOUND;
  *gpuInstance = GiHandleOf(i, static_cast<int>(id));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i, gi;
  if (nvmlReturn_t r = ResolveGi(gpuInstance, &s, &i, &gi); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  const DeviceState& d = s->file().devices[i];
  const MigGpuInstance& g = d.gpu_instances[gi];
  info->device = NvmlHandle(i);
  info->id = static_cast<unsigned>(gi);
  info->profileId = static_cast<unsigned>(GiProfile(d, g).profile_id);
  info->placement = {g.start, g.size};
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info) {
  if (info == nullptr || engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED ||
      profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  SharedState* s;
  int i, gi;
  if (nvmlReturn_t r = ResolveGi(gpuInstance, &s, &i, &gi); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  const DeviceState& d = s->file().devices[i];
  const mig::GpuInstanceProfile& p = GiProfile(d, d.gpu_instances[gi]);
  for (const mig::ComputeInstanceProfile& c : p.compute_profiles) {
    if (c.nvml_profile != static_cast<int>(profile)) continue;
    *info = nvmlComputeInstanceProfileInfo_t{static_cast<unsigned>(c.nvml_profile),
                                             static_cast<unsigned>(c.slices),
                                             static_cast<unsigned>(c.max_instances),
                                             static_cast<unsigned>(c.sms),
                                             static_cast<unsigned>(p.copy_engines),
                                             static_cast<unsigned>(p.decoders),
                                             static_cast<unsigned>(p.encoders),
                                             static_cast<unsigned>(p.jpeg),
                                             static_cast<unsigned>(p.ofa)};
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

// Version 2 or 3 of the struct, as info->version says; the name is nvidia-smi's ("MIG 1c.3g.40gb").
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_v2_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned version = info->version;
  if (version != nvmlComputeInstanceProfileInfo_v2 &&
      version != nvmlComputeInstanceProfileInfo_v3) {
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  nvmlComputeInstanceProfileInfo_t v1;
  nvmlReturn_t r =
      nvmlGpuInstanceGetComputeInstanceProfileInfo(gpuInstance, profile, engProfile, &v1);
  if (r != NVML_SUCCESS) return r;
  std::string name;
  {
    SharedState* s;
    int i, gi;
    if (nvmlReturn_t r2 = ResolveGi(gpuInstance, &s, &i, &gi); r2 != NVML_SUCCESS) return r2;
    SharedState::Lock lock(*s);
    const DeviceState& d = s->file().devices[i];
    name = "MIG " + mig::ComputeInstanceName(GiProfile(d, d.gpu_instances[gi]),
                                             static_cast<int>(v1.sliceCount));
  }
  nvmlComputeInstanceProfileInfo_v3_t out{};
  out.version = version;
  out.id = v1.id;
  out.sliceCount = v1.sliceCount;
  out.instanceCount = v1.instanceCount;
  out.multiprocessorCount = v1.multiprocessorCount;
  out.sharedCopyEngineCount = v1.sharedCopyEngineCount;
  out.sharedDecoderCount = v1.sharedDecoderCount;
  out.sharedEncoderCount = v1.sharedEncoderCount;
  out.sharedJpegCount = v1.sharedJpegCount;
  out.sharedOfaCount = v1.sharedOfaCount;
  snprintf(out.name, sizeof(out.name), "%s", name.c_str());
  // v2 is v3 without its last field.
  size_t size = version == nvmlComputeInstanceProfileInfo_v2
                    ? sizeof(nvmlComputeInstanceProfileInfo_v2_t)
                    : sizeof(nvmlComputeInstanceProfileInfo_v3_t);
  memcpy(static_cast<void*>(info), &out, size);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t* computeInstance) {
  if (computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i, gi;
  if (nvmlReturn_t r = ResolveGi(gpuInstance, &s, &i, &gi); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  tessera::Result<int> ci =
      CreateComputeInstance(s->file(), lock, i, gi, static_cast<int>(profileId));
  if (!ci.ok()) {
    return ci.status().code() == tessera::StatusCode::kNotFound ? NVML_ERROR_NOT_SUPPORTED
                                                                : ToNvml(ci.status());
  }
  *computeInstance = CiHandleOf(i, gi, *ci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  SharedState* s;
  int i, gi, ci;
  if (nvmlReturn_t r = ResolveCi(computeInstance, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  // The handle resolved, so MIG is on: FailedPrecondition is a process on the instance.
  tessera::Status done = DestroyComputeInstance(s->file(), lock, i, gi, ci);
  if (done.code() == tessera::StatusCode::kFailedPrecondition) return NVML_ERROR_IN_USE;
  return ToNvml(done);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t* computeInstances,
                                                unsigned int* count) {
  if (computeInstances == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i, gi;
  if (nvmlReturn_t r = ResolveGi(gpuInstance, &s, &i, &gi); r != NVML_SUCCESS) return r;
  if (profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(*s);
  const MigGpuInstance& g = s->file().devices[i].gpu_instances[gi];
  unsigned n = 0;
  for (int c = 0; c < kMaxComputeInstances; ++c) {
    if (g.cis[c].live && g.cis[c].profile == profileId)
      computeInstances[n++] = CiHandleOf(i, gi, c);
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                   nvmlComputeInstance_t* computeInstance) {
  if (computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i, gi;
  if (nvmlReturn_t r = ResolveGi(gpuInstance, &s, &i, &gi); r != NVML_SUCCESS) return r;
  if (id >= static_cast<unsigned>(kMaxComputeInstances)) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(*s);
  if (!s->file().devices[i].gpu_instances[gi].cis[id].live) return NVML_ERROR_NOT_FOUND;
  *computeInstance = CiHandleOf(i, gi, static_cast<int>(id));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                           nvmlComputeInstanceInfo_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i, gi, ci;
  if (nvmlReturn_t r = ResolveCi(computeInstance, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  const MigComputeInstance& c = s->file().devices[i].gpu_instances[gi].cis[ci];
  info->device = NvmlHandle(i);
  info->gpuInstance = GiHandleOf(i, gi);
  info->id = static_cast<unsigned>(ci);
  info->profileId = c.profile;
  info->placement = {c.start, c.size};
  return NVML_SUCCESS;
}

#undef nvmlComputeInstanceGetInfo
nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance,
                                        nvmlComputeInstanceInfo_t* info) {
  return nvmlComputeInstanceGetInfo_v2(computeInstance, info);
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice) {
  if (isMigDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (NvmlState() == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (IsNvmlMigHandle(device)) {
    SharedState* s;
    int i, gi, ci;
    if (nvmlReturn_t r = NvmlResolveMig(device, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
    *isMigDevice = 1;
    return NVML_SUCCESS;
  }
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  *isMigDevice = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!IsNvmlMigHandle(device)) {
    SharedState* s;
    int i;
    if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
    return NVML_ERROR_NOT_SUPPORTED;  // a GPU handle has no GPU instance
  }
  SharedState* s;
  int i, gi, ci;
  if (nvmlReturn_t r = NvmlResolveMig(device, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
  *id = static_cast<unsigned>(gi);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!IsNvmlMigHandle(device)) {
    SharedState* s;
    int i;
    if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
    return NVML_ERROR_NOT_SUPPORTED;
  }
  SharedState* s;
  int i, gi, ci;
  if (nvmlReturn_t r = NvmlResolveMig(device, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
  *id = static_cast<unsigned>(ci);
  return NVML_SUCCESS;
}

// Seven (one per compute slice) on a GPU in MIG mode; zero otherwise, as NVML documents.
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  const DeviceState& d = s->file().devices[i];
  *count = MigModel(d) != nullptr && d.mig_mode ? mig::kComputeSlices : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice) {
  if (migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = ResolveMigGpu(device, &s, &i); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  const DeviceState& d = s->file().devices[i];
  if (!d.mig_mode) return NVML_ERROR_NOT_SUPPORTED;
  if (index >= static_cast<unsigned>(mig::kComputeSlices)) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<std::pair<int, int>> devices = MigDevicesOf(d);
  if (index >= devices.size()) return NVML_ERROR_NOT_FOUND;
  *migDevice = MigHandleOf(i, devices[index].first, devices[index].second);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                          nvmlDevice_t* device) {
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i, gi, ci;
  if (nvmlReturn_t r = NvmlResolveMig(migDevice, &s, &i, &gi, &ci); r != NVML_SUCCESS) return r;
  *device = NvmlHandle(i);
  return NVML_SUCCESS;
}

}  // extern "C"
