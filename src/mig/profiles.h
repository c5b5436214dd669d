// The facts of MIG (Multi-Instance GPU) per GPU model: its GPU instance profiles, their NVML
// numbers, sizes, engines and valid placements, and the compute instance profiles inside each,
// as NVIDIA's MIG user guide and nvidia-smi show them (docs/mig.md cites each source).
//
//   const GpuModel* h100 = FindModel("NVIDIA H100 80GB HBM3");
//   Result<const GpuInstanceProfile*> p = FindProfile(*h100, "nvidia.com/mig-3g.40gb");
//   // (*p)->memory_mib == 40448, (*p)->starts == {0, 4}
//
// A GPU's memory is 8 memory slices and its SMs 7 compute slices; a GPU instance takes
// `memory_slices` contiguous memory slices from one of its valid `starts` and `compute_slices`
// compute slices. The tables are constants built once; everything here is thread-safe and the
// returned pointers stay valid for the life of the process.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera::mig {

inline constexpr int kMemorySlices = 8;
inline constexpr int kComputeSlices = 7;

// A compute instance profile inside a GPU instance ("1c", "2c", ...): `slices` of the GPU
// instance's compute slices. A compute instance that takes all of them is the GPU instance's
// default one and carries the GPU instance's own name ("3g.40gb", not "3c.3g.40gb").
struct ComputeInstanceProfile {
  int nvml_profile = 0;   // NVML_COMPUTE_INSTANCE_PROFILE_<n>_SLICE: 1c=0, 2c=1, 3c=2, 4c=3, 7c=4
  int slices = 0;         // compute slices
  int max_instances = 0;  // how many fit in the GPU instance
  int sms = 0;
  bool sms_confirmed = false;  // false: estimated (docs/mig.md says how)
  bool operator==(const ComputeInstanceProfile&) const = default;
};

// A GPU instance profile of one model.
struct GpuInstanceProfile {
  std::string name;  // canonical, as nvidia-smi prints it without "MIG ": "1g.10gb+me"
  // NVML_GPU_INSTANCE_PROFILE_*, the index nvmlDeviceGetGpuInstanceProfileInfo takes:
  // 1_SLICE=0, 2_SLICE=1, 3_SLICE=2, 4_SLICE=3, 7_SLICE=4, 1_SLICE_REV1=7, 1_SLICE_REV2=9.
  int nvml_profile = 0;
  int profile_id = 0;      // nvmlGpuInstanceProfileInfo_t.id, the ID `nvidia-smi mig -lgip`
                           // shows and `-cgi` takes: 19, 20, 15, 14, 9, 5, 0
  int compute_slices = 0;  // of kComputeSlices
  int memory_slices = 0;   // of kMemorySlices; also the placement size
  uint64_t memory_mib = 0;
  bool memory_confirmed = false;  // false: estimated (docs/mig.md says how)
  int sms = 0;
  bool sms_confirmed = false;
  int copy_engines = 0;
  int decoders = 0;  // NVDEC
  int encoders = 0;  // NVENC
  int jpeg = 0;      // NVJPG
  int ofa = 0;       // optical flow accelerator
  int max_instances = 0;
  bool media_extensions = false;  // a "+me" profile: the GPU's one set of media engines
  std::vector<int> starts;        // valid first memory slices, ascending
  std::vector<ComputeInstanceProfile> compute_profiles;  // ascending slices; last = all of them
  bool operator==(const GpuInstanceProfile&) const = default;
};

// A MIG-capable GPU model.
struct GpuModel {
  std::string key;                           // Tessera's short name: "H100-SXM5-80GB"
  std::string name;                          // the NVML device name: "NVIDIA H100 80GB HBM3"
  std::vector<std::string> other_names;      // more NVML names of the same table (older drivers,
                                             // other form factors)
  std::vector<GpuInstanceProfile> profiles;  // smallest first, as `nvidia-smi mig -lgip` lists
  bool operator==(const GpuModel&) const = default;

  // The largest profile: the whole GPU (7g), the last of `profiles`.
  const GpuInstanceProfile& whole() const { return profiles.back(); }
};

// Every model Tessera knows, in a fixed order.
const std::vector<GpuModel>& Models();

// The model with this key or NVML name (case, spaces, '-' and '_' ignored), or nullptr.
const GpuModel* FindModel(std::string_view name);

// The canonical profile name in `text`, which may be spelled as NVIDIA's device plugin
// resource ("nvidia.com/mig-1g.10gb", "mig-1g.10gb.me"), as nvidia-smi prints it
// ("MIG 1g.10gb+me") or plain ("1g.10gb"). Checks only the form `<g>g.<n>gb[+me]`; an error
// names the text and the form.
Result<std::string> CanonicalProfileName(std::string_view text);

// The model's profile named by `text` (any spelling CanonicalProfileName takes). Errors:
// InvalidArgument for a malformed name, NotFound for a name the model lacks; both say what was
// asked and list the model's profiles: "mig-9g.10gb: no such profile on NVIDIA H100 80GB HBM3;
// allowed: 1g.10gb, ...".
Result<const GpuInstanceProfile*> FindProfile(const GpuModel& model, std::string_view text);

// The model's profile with this NVML profile index (NVML_GPU_INSTANCE_PROFILE_*), or nullptr.
const GpuInstanceProfile* FindProfileByNvmlIndex(const GpuModel& model, int nvml_profile);

// The Kubernetes extended resource NVIDIA's device plugin (mixed strategy) advertises for the
// profile: "nvidia.com/mig-1g.10gb"; '+' becomes '.' ("nvidia.com/mig-1g.10gb.me").
std::string ResourceName(const GpuInstanceProfile& profile);

// The name of a compute instance of `slices` slices inside `profile`: "1c.3g.40gb", or the
// profile's own name when it takes all its compute slices.
std::string ComputeInstanceName(const GpuInstanceProfile& profile, int slices);

// The model's profile names, comma separated, in table order ("1g.10gb, 1g.10gb+me, ...").
std::string ProfileNames(const GpuModel& model);

}  // namespace tessera::mig
