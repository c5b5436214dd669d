#include "mig/profiles.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "mig/layout.h"

namespace tessera::mig {
namespace {

const GpuModel& Model(std::string_view key) {
  const GpuModel* model = FindModel(key);
  if (model == nullptr) throw std::runtime_error("no model " + std::string(key));
  return *model;
}

std::vector<std::string> Names(const GpuModel& model) {
  std::vector<std::string> names;
  for (const GpuInstanceProfile& p : model.profiles) names.push_back(p.name);
  return names;
}

TEST(MigProfiles, ModelsAndTheirProfileNames) {
  struct Case {
    std::string key;
    std::vector<std::string> names;
  };
  std::vector<Case> cases = {
      {"A100-SXM4-40GB",
       {"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
      {"A100-SXM4-80GB",
       {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H100-SXM5-80GB",
       {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H100-PCIE-80GB",
       {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H200-141GB",
       {"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
  };
  ASSERT_EQ(Models().size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(Models()[i].key, cases[i].key);
    EXPECT_EQ(Names(Models()[i]), cases[i].names) << cases[i].key;
  }
}

// The NVML numbers and nvidia-smi IDs follow from a profile's shape on every model
// (compute slices, memory slices, +me).
TEST(MigProfiles, NvmlNumbersFollowTheShape) {
  struct Shape {
    int compute, memory;
    bool me;
    int nvml, id;
  };
  std::vector<Shape> shapes = {{1, 1, false, 0, 19}, {1, 1, true, 7, 20}, {1, 2, false, 9, 15},
                               {2, 2, false, 1, 14}, {3, 4, false, 2, 9}, {4, 4, false, 3, 5},
                               {7, 8, false, 4, 0}};
  for (const GpuModel& model : Models()) {
    ASSERT_EQ(model.profiles.size(), shapes.size()) << model.key;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const GpuInstanceProfile& p = model.profiles[i];
      SCOPED_TRACE(model.key + " " + p.name);
      EXPECT_EQ(p.compute_slices, shapes[i].compute);
      EXPECT_EQ(p.memory_slices, shapes[i].memory);
      EXPECT_EQ(p.media_extensions, shapes[i].me);
      EXPECT_EQ(p.nvml_profile, shapes[i].nvml);
      EXPECT_EQ(p.profile_id, shapes[i].id);
      EXPECT_EQ(p.name.substr(0, p.name.find('.')), std::to_string(p.compute_slices) + "g");
      EXPECT_EQ(FindProfileByNvmlIndex(model, p.nvml_profile), &p);
    }
  }
}

TEST(MigProfiles, TablesAreConsistent) {
  for (const GpuModel& model : Models()) {
    const GpuInstanceProfile& whole = model.whole();
    EXPECT_EQ(whole.compute_slices, kComputeSlices) << model.key;
    EXPECT_EQ(whole.memory_slices, kMemorySlices) << model.key;
    for (const GpuInstanceProfile& p : model.profiles) {
      SCOPED_TRACE(model.key + " " + p.name);
      ASSERT_FALSE(p.starts.empty());
      for (size_t i = 0; i < p.starts.size(); ++i) {
        EXPECT_GE(p.starts[i], 0);
        EXPECT_LE(p.starts[i] + p.memory_slices, kMemorySlices);  // inside the 8 slices
        EXPECT_EQ(p.starts[i] % p.memory_slices, 0);              // aligned to its size
        if (i > 0) {
          EXPECT_LT(p.starts[i - 1], p.starts[i]);
        }
      }
      // Memory within its share of the whole GPU; multiples of 1/8 GiB as NVML reports them.
      EXPECT_LE(p.memory_mib * kMemorySlices, whole.memory_mib * p.memory_slices);
      EXPECT_EQ(p.memory_mib % 128, 0u);
      EXPECT_GT(p.sms, 0);
      EXPECT_LE(p.sms, whole.sms);
      EXPECT_LE(p.copy_engines, whole.copy_engines);
      EXPECT_LE(p.decoders, whole.decoders);
      EXPECT_LE(p.ofa, 1);
      EXPECT_EQ(p.ofa == 1, p.media_extensions || &p == &whole);
      EXPECT_EQ(p.max_instances, p.media_extensions ? 1 : static_cast<int>(p.starts.size()));
      // Compute instances: ascending, the last takes the whole GPU instance with its SMs.
      ASSERT_FALSE(p.compute_profiles.empty());
      const ComputeInstanceProfile& full = p.compute_profiles.back();
      EXPECT_EQ(full.slices, p.compute_slices);
      EXPECT_EQ(full.max_instances, 1);
      EXPECT_EQ(full.sms, p.sms);
      for (const ComputeInstanceProfile& ci : p.compute_profiles) {
        EXPECT_LE(ci.slices * ci.max_instances, p.compute_slices);
        EXPECT_LE(ci.sms, p.sms);
      }
    }
  }
}

// Each profile's instance count is reachable: that many instances fit on an empty GPU.
TEST(MigProfiles, MaxInstancesAreReachable) {
  for (const GpuModel& model : Models()) {
    for (const GpuInstanceProfile& p : model.profiles) {
      Layout gpu(model);
      for (int n = 0; n < p.max_instances; ++n) {
        std::vector<int> free = gpu.FreeStarts(p);
        ASSERT_FALSE(free.empty()) << model.key << " " << p.name << " instance " << n;
        ASSERT_TRUE(gpu.Create(p, free.front()).ok());
      }
      EXPECT_TRUE(gpu.FreeStarts(p).empty()) << model.key << " " << p.name;
    }
  }
  Layout h100(Model("H100-SXM5-80GB"));
  for (int start = 0; start < 7; ++start) ASSERT_TRUE(h100.Create("1g.10gb", start).ok());
  EXPECT_EQ(h100.ToString(),
            "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.10gb@6");
}

// Every layout the placement rules reach keeps within 7 compute slices, 8 memory slices and the
// whole GPU's memory: the rules alone keep the hardware's limits.
TEST(MigProfiles, EveryReachableLayoutFitsTheGpu) {
  for (const GpuModel& model : Models()) {
    std::set<std::string> seen;
    std::vector<Layout> todo = {Layout(model)};
    while (!todo.empty()) {
      Layout layout = todo.back();
      todo.pop_back();
      if (!seen.insert(layout.ToString()).second) continue;
      EXPECT_LE(layout.UsedComputeSlices(), kComputeSlices) << layout.ToString();
      EXPECT_LE(layout.UsedMemorySlices(), kMemorySlices) << layout.ToString();
      uint64_t mib = 0;
      for (const Instance& i : layout.instances()) {
        mib += (*FindProfile(model, i.profile))->memory_mib;
      }
      EXPECT_LE(mib, model.whole().memory_mib) << layout.ToString();
      for (const GpuInstanceProfile& p : model.profiles) {
        for (int start : layout.FreeStarts(p)) {
          Layout next = layout;
          ASSERT_TRUE(next.Create(p, start).ok());
          todo.push_back(next);
        }
      }
    }
    // Distinct layouts of the published placements, the empty one included (docs/mig.md).
    EXPECT_EQ(seen.size(), 2319u) << model.key;
  }
}

TEST(MigProfiles, FindModelByKeyOrNvmlName) {
  struct Case {
    std::string name;
    std::string key;  // "" = unknown
  };
  std::vector<Case> cases = {
      {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"},
      {"nvidia-h100-80gb-hbm3", "H100-SXM5-80GB"},
      {"H100-SXM5-80GB", "H100-SXM5-80GB"},
      {"NVIDIA H100 PCIe", "H100-PCIE-80GB"},
      {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
      {"A100-SXM4-40GB", "A100-SXM4-40GB"},
      {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"},
      {"NVIDIA H200", "H200-141GB"},
      {" NVIDIA H200 NVL ", "H200-141GB"},
      {"NVIDIA A10", ""},
      {"", ""},
  };
  for (const Case& c : cases) {
    const GpuModel* model = FindModel(c.name);
    if (c.key.empty()) {
      EXPECT_EQ(model, nullptr) << c.name;
    } else {
      ASSERT_NE(model, nullptr) << c.name;
      EXPECT_EQ(model->key, c.key) << c.name;
    }
  }
}

TEST(MigProfiles, CanonicalNames) {
  struct Case {
    std::string text;
    std::string name;  // "" = error
  };
  std::vector<Case> cases = {
      {"1g.10gb", "1g.10gb"},
      {"mig-1g.10gb", "1g.10gb"},
      {"nvidia.com/mig-3g.40gb", "3g.40gb"},
      {"nvidia.com/mig-1g.10gb.me", "1g.10gb+me"},
      {"MIG 1g.10gb+me", "1g.10gb+me"},
      {" 7G.141GB ", "7g.141gb"},
      {"", ""},
      {"mig-", ""},
      {"1g10gb", ""},
      {"g.10gb", ""},
      {"01g.10gb", ""},
      {"1g.10", ""},
      {"1g.10gb+mee", ""},
      {"1g.10gb+gfx", ""},
      {"nvidia.com/gpu", ""},
  };
  for (const Case& c : cases) {
    Result<std::string> name = CanonicalProfileName(c.text);
    if (c.name.empty()) {
      ASSERT_FALSE(name.ok()) << c.text;
      EXPECT_EQ(name.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(name.status().message(),
                "\"" + c.text +
                    "\" is not a MIG profile name: expected <g>g.<n>gb or <g>g.<n>gb+me (for "
                    "example 1g.10gb, mig-3g.40gb, nvidia.com/mig-1g.10gb.me)");
    } else {
      ASSERT_TRUE(name.ok()) << c.text << ": " << name.status().message();
      EXPECT_EQ(*name, c.name) << c.text;
    }
  }
}

TEST(MigProfiles, FindProfileSaysWhatIsAllowed) {
  const GpuModel& h100 = Model("H100-SXM5-80GB");
  Result<const GpuInstanceProfile*> found = FindProfile(h100, "nvidia.com/mig-3g.40gb");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)->memory_mib, 40448u);
  EXPECT_EQ((*found)->starts, (std::vector<int>{0, 4}));

  Result<const GpuInstanceProfile*> missing = FindProfile(h100, "mig-9g.10gb");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "mig-9g.10gb: no such profile on NVIDIA H100 80GB HBM3; allowed: 1g.10gb, "
            "1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb");

  // A profile of another model.
  EXPECT_EQ(FindProfile(h100, "1g.5gb").status().code(), StatusCode::kNotFound);

  Result<const GpuInstanceProfile*> malformed = FindProfile(h100, "mig-big");
  EXPECT_EQ(malformed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(malformed.status().message().find(
                "; profiles of NVIDIA H100 80GB HBM3: 1g.10gb, 1g.10gb+me, 1g.20gb"),
            std::string::npos)
      << malformed.status().message();
}

TEST(MigProfiles, ResourceAndComputeInstanceNames) {
  const GpuModel& h100 = Model("H100-SXM5-80GB");
  const GpuInstanceProfile& me = **FindProfile(h100, "1g.10gb+me");
  const GpuInstanceProfile& p3 = **FindProfile(h100, "3g.40gb");
  EXPECT_EQ(ResourceName(me), "nvidia.com/mig-1g.10gb.me");
  EXPECT_EQ(ResourceName(p3), "nvidia.com/mig-3g.40gb");
  EXPECT_EQ(*FindProfile(h100, ResourceName(me)), &me);  // the resource name reads back
  EXPECT_EQ(ComputeInstanceName(p3, 1), "1c.3g.40gb");
  EXPECT_EQ(ComputeInstanceName(p3, 3), "3g.40gb");
  EXPECT_EQ(ProfileNames(Model("A100-SXM4-40GB")),
            "1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb");
}

// Values quoted from the sources (docs/mig.md), so that a slip in the tables shows.
TEST(MigProfiles, PublishedValues) {
  struct Case {
    std::string model, profile;
    uint64_t mib;
    int sms, copy_engines, decoders, jpeg, ofa, max;
  };
  std::vector<Case> cases = {
      {"A100-SXM4-40GB", "1g.5gb", 4864, 14, 1, 0, 0, 0, 7},
      {"A100-SXM4-40GB", "1g.5gb+me", 4864, 14, 1, 1, 1, 1, 1},
      {"A100-SXM4-40GB", "3g.20gb", 19968, 42, 3, 2, 0, 0, 2},
      {"A100-SXM4-40GB", "7g.40gb", 40192, 98, 7, 5, 1, 1, 1},
      {"A100-SXM4-80GB", "1g.20gb", 19968, 14, 1, 1, 0, 0, 4},
      {"A100-SXM4-80GB", "7g.80gb", 80896, 98, 7, 5, 1, 1, 1},
      {"H100-SXM5-80GB", "1g.10gb", 9984, 16, 1, 1, 1, 0, 7},
      {"H100-SXM5-80GB", "1g.20gb", 20096, 26, 1, 1, 1, 0, 4},
      {"H100-SXM5-80GB", "3g.40gb", 40448, 60, 3, 3, 3, 0, 2},
      {"H100-SXM5-80GB", "7g.80gb", 81152, 132, 8, 7, 7, 1, 1},
      {"H100-PCIE-80GB", "2g.20gb", 20096, 30, 2, 2, 2, 0, 3},
      {"H100-PCIE-80GB", "7g.80gb", 81152, 114, 8, 7, 7, 1, 1},
      {"H200-141GB", "3g.71gb", 71296, 60, 3, 3, 3, 0, 2},
  };
  for (const Case& c : cases) {
    const GpuInstanceProfile& p = **FindProfile(Model(c.model), c.profile);
    SCOPED_TRACE(c.model + " " + c.profile);
    EXPECT_EQ(p.memory_mib, c.mib);
    EXPECT_EQ(p.sms, c.sms);
    EXPECT_EQ(p.copy_engines, c.copy_engines);
    EXPECT_EQ(p.decoders, c.decoders);
    EXPECT_EQ(p.jpeg, c.jpeg);
    EXPECT_EQ(p.ofa, c.ofa);
    EXPECT_EQ(p.max_instances, c.max);
  }
  // What is an estimate says so.
  EXPECT_FALSE((*FindProfile(Model("H200-141GB"), "3g.71gb"))->memory_confirmed);
  EXPECT_TRUE((*FindProfile(Model("H200-141GB"), "3g.71gb"))->sms_confirmed);
  EXPECT_TRUE((*FindProfile(Model("H100-SXM5-80GB"), "3g.40gb"))->memory_confirmed);
  // Compute instances of a 3g.20gb on an A100: 1c x3, 2c x1, the 3g itself (nvidia-smi -lcip).
  const GpuInstanceProfile& a3 = **FindProfile(Model("A100-SXM4-40GB"), "3g.20gb");
  ASSERT_EQ(a3.compute_profiles.size(), 3u);
  EXPECT_EQ(
      a3.compute_profiles[0],
      (ComputeInstanceProfile{
          .nvml_profile = 0, .slices = 1, .max_instances = 3, .sms = 14, .sms_confirmed = true}));
  EXPECT_EQ(a3.compute_profiles[1].sms, 28);
  EXPECT_EQ(a3.compute_profiles[2].nvml_profile, 2);
  const GpuInstanceProfile& a7 = **FindProfile(Model("A100-SXM4-40GB"), "7g.40gb");
  EXPECT_EQ(a7.compute_profiles[3].slices, 4);  // "4c.7g.40gb", 56 SMs
  EXPECT_EQ(a7.compute_profiles[3].sms, 56);
}

}  // namespace
}  // namespace tessera::mig
