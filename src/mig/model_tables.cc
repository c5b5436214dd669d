// The MIG tables of the models Tessera knows. Every number comes from a public NVIDIA source;
// docs/mig.md lists the sources per column and the few values that are estimates, which carry
// `*_confirmed = false` here.
//
// Sources, in short:
//  [G]  NVIDIA MIG user guide (v580), "Supported MIG Profiles": names, fractions, engines, copy
//       engines, instance counts; "Getting Started": the `nvidia-smi mig -lgipp` placements
//       (A100) and device memory; "Concepts": compute instance profiles (1c..4c of a 4g).
//  [S]  `nvidia-smi mig -lgip` output published for each GPU: profile IDs, memory (GiB with two
//       decimals; every value is a multiple of 1/8 GiB, so 19.62 is 20096 MiB), SM counts.
//  [P]  `nvidia-smi mig -lgipp` on H100 80GB and H100 NVL: the same placements as the A100's.
//  [N]  nvml.h (via NVIDIA/go-nvml): NVML_GPU_INSTANCE_PROFILE_* and
//       NVML_COMPUTE_INSTANCE_PROFILE_* numbers.
#include "mig/profiles.h"

#include <utility>

namespace tessera::mig {
namespace {

// Valid placements [G][P]: the same on every model here; `-lgipp` prints them as
// {starts}:size with size = the profile's memory slices.
const std::vector<int> kEveryOneSlice = {0, 1, 2, 3, 4, 5, 6};
const std::vector<int> kEveryTwoSlices = {0, 2, 4, 6};
const std::vector<int> kTwoSliceInstances = {0, 2, 4};
const std::vector<int> kHalves = {0, 4};
const std::vector<int> kStartOnly = {0};

// One row of a model's table: a GPU instance profile as [S] prints it.
struct Row {
  const char* name;
  int nvml_profile;
  int profile_id;
  int compute_slices;
  int memory_slices;
  uint64_t memory_mib;
  bool memory_confirmed;
  int sms;
  bool sms_confirmed;
  int copy_engines, decoders, encoders, jpeg, ofa;
  int max_instances;
  const std::vector<int>* starts;
};

constexpr bool kSeen = true;       // the value is in a cited source
constexpr bool kEstimate = false;  // derived as docs/mig.md says

// Compute instance profiles inside a GPU instance of `g` compute slices [G][N]: {slices, count}.
// A 7g holds seven 1c, three 2c, two 3c or one 4c; a 4g four 1c, two 2c, one 3c.
std::vector<std::pair<int, int>> ComputeShapes(int g) {
  switch (g) {
    case 1:
      return {{1, 1}};
    case 2:
      return {{1, 2}, {2, 1}};
    case 3:
      return {{1, 3}, {2, 1}, {3, 1}};
    case 4:
      return {{1, 4}, {2, 2}, {3, 1}, {4, 1}};
    default:
      return {{1, 7}, {2, 3}, {3, 2}, {4, 1}, {7, 1}};
  }
}

// NVML_COMPUTE_INSTANCE_PROFILE_<n>_SLICE [N].
int ComputeNvmlProfile(int slices) {
  switch (slices) {
    case 1:
      return 0;
    case 2:
      return 1;
    case 3:
      return 2;
    case 4:
      return 3;
    default:
      return 4;  // 7
  }
}

// `ci_sms_per_slice`: SMs of a compute instance per compute slice when it takes part of its GPU
// instance; one that takes all of it has the GPU instance's SMs.
GpuModel Build(std::string key, std::string name, std::vector<std::string> other_names,
               const std::vector<Row>& rows, int ci_sms_per_slice, bool ci_sms_confirmed) {
  GpuModel model{
      .key = std::move(key), .name = std::move(name), .other_names = std::move(other_names)};
  for (const Row& r : rows) {
    GpuInstanceProfile p{.name = r.name,
                         .nvml_profile = r.nvml_profile,
                         .profile_id = r.profile_id,
                         .compute_slices = r.compute_slices,
                         .memory_slices = r.memory_slices,
                         .memory_mib = r.memory_mib,
                         .memory_confirmed = r.memory_confirmed,
                         .sms = r.sms,
                         .sms_confirmed = r.sms_confirmed,
                         .copy_engines = r.copy_engines,
                         .decoders = r.decoders,
                         .encoders = r.encoders,
                         .jpeg = r.jpeg,
                         .ofa = r.ofa,
                         .max_instances = r.max_instances,
                         .media_extensions = std::string_view(r.name).ends_with("+me"),
                         .starts = *r.starts};
    for (auto [slices, count] : ComputeShapes(r.compute_slices)) {
      bool whole = slices == r.compute_slices;
      p.compute_profiles.push_back({.nvml_profile = ComputeNvmlProfile(slices),
                                    .slices = slices,
                                    .max_instances = count,
                                    .sms = whole ? r.sms : slices * ci_sms_per_slice,
                                    .sms_confirmed = whole ? r.sms_confirmed : ci_sms_confirmed});
    }
    model.profiles.push_back(std::move(p));
  }
  return model;
}

// clang-format off
// A100-SXM4-40GB [G Table 6][S]. NVDEC/JPEG/OFA and copy engines from [G]; -lgip agrees.
const std::vector<Row> kA100_40 = {
  // name          nvml  id g mem   MiB                SMs              CE DEC ENC JPG OFA max placements
  {"1g.5gb",        0,  19, 1, 1,  4864, kSeen,     14, kSeen,     1,  0,  0,  0,  0,  7, &kEveryOneSlice},
  {"1g.5gb+me",     7,  20, 1, 1,  4864, kSeen,     14, kSeen,     1,  1,  0,  1,  1,  1, &kEveryOneSlice},
  {"1g.10gb",       9,  15, 1, 2,  9856, kSeen,     14, kSeen,     1,  1,  0,  0,  0,  4, &kEveryTwoSlices},
  {"2g.10gb",       1,  14, 2, 2,  9856, kSeen,     28, kSeen,     2,  1,  0,  0,  0,  3, &kTwoSliceInstances},
  {"3g.20gb",       2,   9, 3, 4, 19968, kSeen,     42, kSeen,     3,  2,  0,  0,  0,  2, &kHalves},
  {"4g.20gb",       3,   5, 4, 4, 19968, kSeen,     56, kSeen,     4,  2,  0,  0,  0,  1, &kStartOnly},
  {"7g.40gb",       4,   0, 7, 8, 40192, kSeen,     98, kSeen,     7,  5,  0,  1,  1,  1, &kStartOnly},
};

// A100-SXM4-80GB: [G] names the same profiles with doubled memory; -lgip [S] gives MiB and SMs.
const std::vector<Row> kA100_80 = {
  {"1g.10gb",       0,  19, 1, 1,  9728, kSeen,     14, kSeen,     1,  0,  0,  0,  0,  7, &kEveryOneSlice},
  {"1g.10gb+me",    7,  20, 1, 1,  9728, kSeen,     14, kSeen,     1,  1,  0,  1,  1,  1, &kEveryOneSlice},
  {"1g.20gb",       9,  15, 1, 2, 19968, kSeen,     14, kSeen,     1,  1,  0,  0,  0,  4, &kEveryTwoSlices},
  {"2g.20gb",       1,  14, 2, 2, 19968, kSeen,     28, kSeen,     2,  1,  0,  0,  0,  3, &kTwoSliceInstances},
  {"3g.40gb",       2,   9, 3, 4, 40192, kSeen,     42, kSeen,     3,  2,  0,  0,  0,  2, &kHalves},
  {"4g.40gb",       3,   5, 4, 4, 40192, kSeen,     56, kSeen,     4,  2,  0,  0,  0,  1, &kStartOnly},
  {"7g.80gb",       4,   0, 7, 8, 80896, kSeen,     98, kSeen,     7,  5,  0,  1,  1,  1, &kStartOnly},
};

// H100 80GB SXM5 ("NVIDIA H100 80GB HBM3") [G Table 7][S][P].
const std::vector<Row> kH100Sxm = {
  {"1g.10gb",       0,  19, 1, 1,  9984, kSeen,     16, kSeen,     1,  1,  0,  1,  0,  7, &kEveryOneSlice},
  {"1g.10gb+me",    7,  20, 1, 1,  9984, kSeen,     16, kSeen,     1,  1,  0,  1,  1,  1, &kEveryOneSlice},
  {"1g.20gb",       9,  15, 1, 2, 20096, kSeen,     26, kSeen,     1,  1,  0,  1,  0,  4, &kEveryTwoSlices},
  {"2g.20gb",       1,  14, 2, 2, 20096, kSeen,     32, kSeen,     2,  2,  0,  2,  0,  3, &kTwoSliceInstances},
  {"3g.40gb",       2,   9, 3, 4, 40448, kSeen,     60, kSeen,     3,  3,  0,  3,  0,  2, &kHalves},
  {"4g.40gb",       3,   5, 4, 4, 40448, kSeen,     64, kSeen,     4,  4,  0,  4,  0,  1, &kStartOnly},
  {"7g.80gb",       4,   0, 7, 8, 81152, kSeen,    132, kSeen,     8,  7,  0,  7,  1,  1, &kStartOnly},
};

// H100 80GB PCIe ("NVIDIA H100 PCIe"): the SXM5's table with fewer SMs per instance [S].
const std::vector<Row> kH100Pcie = {
  {"1g.10gb",       0,  19, 1, 1,  9984, kSeen,     14, kSeen,     1,  1,  0,  1,  0,  7, &kEveryOneSlice},
  {"1g.10gb+me",    7,  20, 1, 1,  9984, kSeen,     14, kSeen,     1,  1,  0,  1,  1,  1, &kEveryOneSlice},
  {"1g.20gb",       9,  15, 1, 2, 20096, kSeen,     14, kSeen,     1,  1,  0,  1,  0,  4, &kEveryTwoSlices},
  {"2g.20gb",       1,  14, 2, 2, 20096, kSeen,     30, kSeen,     2,  2,  0,  2,  0,  3, &kTwoSliceInstances},
  {"3g.40gb",       2,   9, 3, 4, 40448, kSeen,     46, kSeen,     3,  3,  0,  3,  0,  2, &kHalves},
  {"4g.40gb",       3,   5, 4, 4, 40448, kSeen,     62, kSeen,     4,  4,  0,  4,  0,  1, &kStartOnly},
  {"7g.80gb",       4,   0, 7, 8, 81152, kSeen,    114, kSeen,     8,  7,  0,  7,  1,  1, &kStartOnly},
};

// H200 141GB (SXM "NVIDIA H200" and "NVIDIA H200 NVL") [G Table 8]. No published -lgip output
// gives its MiB: they are estimates (the H100's MiB scaled by 143771/81559, the two GPUs' total
// MiB, rounded down to 128 MiB), as are the SMs of 1g.18gb and 1g.35gb (the H100 SXM5's).
// 2g.35gb 32, 3g.71gb 60, 4g.71gb 64 and 7g.141gb 132 SMs are seen in published runs.
const std::vector<Row> kH200 = {
  {"1g.18gb",       0,  19, 1, 1,  17536, kEstimate, 16, kEstimate, 1,  1,  0,  1,  0,  7, &kEveryOneSlice},
  {"1g.18gb+me",    7,  20, 1, 1,  17536, kEstimate, 16, kEstimate, 1,  1,  0,  1,  1,  1, &kEveryOneSlice},
  {"1g.35gb",       9,  15, 1, 2,  35328, kEstimate, 26, kEstimate, 1,  1,  0,  1,  0,  4, &kEveryTwoSlices},
  {"2g.35gb",       1,  14, 2, 2,  35328, kEstimate, 32, kSeen,     2,  2,  0,  2,  0,  3, &kTwoSliceInstances},
  {"3g.71gb",       2,   9, 3, 4,  71296, kEstimate, 60, kSeen,     3,  3,  0,  3,  0,  2, &kHalves},
  {"4g.71gb",       3,   5, 4, 4,  71296, kEstimate, 64, kSeen,     4,  4,  0,  4,  0,  1, &kStartOnly},
  {"7g.141gb",      4,   0, 7, 8, 142976, kEstimate,132, kSeen,     8,  7,  0,  7,  1,  1, &kStartOnly},
};
// clang-format on

// Every known model, built from the tables above.
std::vector<GpuModel> BuildModels() {
  std::vector<GpuModel> models;
  // A100: compute instances have 14 SMs per slice (-lcip of a 3g.20gb [G]; "4c.7g.40gb" with 56).
  models.push_back(
      Build("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", {"A100-SXM4-40GB"}, kA100_40, 14, kSeen));
  models.push_back(
      Build("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", {"A100-SXM4-80GB"}, kA100_80, 14, kSeen));
  // H100/H200 compute instances: the 1g profile's SMs per slice, an estimate.
  models.push_back(Build("H100-SXM5-80GB", "NVIDIA H100 80GB HBM3", {}, kH100Sxm, 16, kEstimate));
  models.push_back(Build("H100-PCIE-80GB", "NVIDIA H100 PCIe", {}, kH100Pcie, 14, kEstimate));
  models.push_back(Build("H200-141GB", "NVIDIA H200", {"NVIDIA H200 NVL"}, kH200, 16, kEstimate));
  return models;
}

}  // namespace

const std::vector<GpuModel>& Models() {
  static const std::vector<GpuModel> models = BuildModels();
  return models;
}

}  // namespace tessera::mig
