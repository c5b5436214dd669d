#include "mig/layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::mig {
namespace {

const GpuModel& H100() {
  return *FindModel("NVIDIA H100 80GB HBM3");
}

// A layout built from "profile@start" items; fails the test if one cannot be created.
Layout Build(const GpuModel& model, const std::vector<std::pair<std::string, int>>& items) {
  Layout layout(model);
  for (const auto& [profile, start] : items) {
    Status created = layout.Create(profile, start);
    EXPECT_TRUE(created.ok()) << profile << "@" << start << ": " << created.message();
  }
  return layout;
}

// The placement rules of the MIG user guide on an H100 80GB.
TEST(MigLayout, CanPlaceFollowsTheGuide) {
  struct Case {
    std::string name;
    std::vector<std::pair<std::string, int>> before;
    std::string profile;
    int start;
    StatusCode want;
  };
  using P = std::vector<std::pair<std::string, int>>;
  const StatusCode ok = StatusCode::kOk, invalid = StatusCode::kInvalidArgument,
                   taken = StatusCode::kResourceExhausted;
  std::vector<Case> cases = {
      {"4g only at slice 0", {}, "4g.40gb", 0, ok},
      {"4g not at 4", {}, "4g.40gb", 4, invalid},
      {"3g at 0", {}, "3g.40gb", 0, ok},
      {"3g at 4", {}, "3g.40gb", 4, ok},
      {"3g not at 2", {}, "3g.40gb", 2, invalid},
      {"a second 3g beside the first", P{{"3g.40gb", 0}}, "3g.40gb", 4, ok},
      {"a 3g beside a 4g", P{{"4g.40gb", 0}}, "3g.40gb", 4, ok},
      {"no 4g once a 3g holds 0-3", P{{"3g.40gb", 0}}, "4g.40gb", 0, taken},
      {"7g the whole GPU", {}, "7g.80gb", 0, ok},
      {"no 7g beside anything", P{{"1g.10gb", 6}}, "7g.80gb", 0, taken},
      {"nothing beside a 7g", P{{"7g.80gb", 0}}, "1g.10gb", 3, taken},
      {"1g at 0-6", {}, "1g.10gb", 6, ok},
      {"no 1g at slice 7", {}, "1g.10gb", 7, invalid},
      {"1g.20gb on even slices", {}, "1g.20gb", 6, ok},
      {"1g.20gb not on odd slices", {}, "1g.20gb", 3, invalid},
      {"2g at 0, 2, 4", {}, "2g.20gb", 4, ok},
      {"2g not at 6", {}, "2g.20gb", 6, invalid},
      {"2g overlapping a 1g", P{{"1g.10gb", 3}}, "2g.20gb", 2, taken},
      {"one +me per GPU", P{{"1g.10gb+me", 0}}, "1g.10gb+me", 1, taken},
      {"+me beside plain 1g", P{{"1g.10gb", 0}, {"1g.10gb", 1}}, "1g.10gb+me", 2, ok},
      {"start outside the GPU", {}, "1g.10gb", 9, invalid},
      {"negative start", {}, "1g.10gb", -1, invalid},
  };
  for (const Case& c : cases) {
    Layout layout = Build(H100(), c.before);
    const GpuInstanceProfile& p = **FindProfile(H100(), c.profile);
    EXPECT_EQ(layout.CheckPlace(p, c.start).code(), c.want)
        << c.name << ": " << layout.CheckPlace(p, c.start).message();
    EXPECT_EQ(layout.CanPlace(p, c.start), c.want == ok) << c.name;
  }
}

TEST(MigLayout, ReasonsNameTheSlicesAndTheRule) {
  Layout gpu = Build(H100(), {{"1g.10gb", 2}});
  const GpuInstanceProfile& p3 = **FindProfile(H100(), "3g.40gb");
  EXPECT_EQ(gpu.CheckPlace(p3, 0).message(),
            "3g.40gb@0 needs memory slices 0-3, and 1g.10gb@2 holds slice 2");
  EXPECT_EQ(gpu.CheckPlace(p3, 2).message(),
            "3g.40gb cannot start at slice 2 on NVIDIA H100 80GB HBM3: its placements start at "
            "0, 4");
  Layout me = Build(H100(), {{"1g.10gb+me", 5}});
  EXPECT_EQ(me.CheckPlace(**FindProfile(H100(), "1g.10gb+me"), 0).message(),
            "1g.10gb+me: at most 1 per GPU (the GPU has one set of media engines), 1 in use");
  // A profile of another model's table.
  const GpuInstanceProfile& a100 = **FindProfile(*FindModel("A100-SXM4-80GB"), "1g.10gb");
  EXPECT_EQ(gpu.CheckPlace(a100, 0).code(), StatusCode::kInvalidArgument);
}

TEST(MigLayout, FreeStarts) {
  const GpuInstanceProfile& p1 = **FindProfile(H100(), "1g.10gb");
  const GpuInstanceProfile& p2 = **FindProfile(H100(), "2g.20gb");
  const GpuInstanceProfile& p3 = **FindProfile(H100(), "3g.40gb");
  Layout gpu = Build(H100(), {{"1g.10gb", 0}, {"2g.20gb", 4}});
  EXPECT_EQ(gpu.FreeStarts(p1), (std::vector<int>{1, 2, 3, 6}));
  EXPECT_EQ(gpu.FreeStarts(p2), (std::vector<int>{2}));
  EXPECT_TRUE(gpu.FreeStarts(p3).empty());
  EXPECT_EQ(gpu.UsedMemorySlices(), 3);
  EXPECT_EQ(gpu.UsedComputeSlices(), 3);
  EXPECT_EQ(gpu.Count(p1), 1);
  EXPECT_TRUE(gpu.SliceUsed(5));
  EXPECT_FALSE(gpu.SliceUsed(7));
}

TEST(MigLayout, CreateAndDestroy) {
  Layout gpu(H100());
  ASSERT_TRUE(gpu.Create("3g.40gb", 4).ok());
  ASSERT_TRUE(gpu.Create("nvidia.com/mig-1g.10gb", 0).ok());
  ASSERT_TRUE(gpu.Create("mig-2g.20gb", 2).ok());
  EXPECT_EQ(gpu.ToString(), "1g.10gb@0,2g.20gb@2,3g.40gb@4");
  EXPECT_EQ(gpu.instances()[1], (Instance{.profile = "2g.20gb", .start = 2, .size = 2}));

  // A failed create changes nothing.
  Layout before = gpu;
  EXPECT_EQ(gpu.Create("1g.10gb", 4).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(gpu.Create("9g.1gb", 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(gpu, before);

  Status missing = gpu.Destroy(1);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(),
            "no GPU instance starts at slice 1 on this NVIDIA H100 80GB HBM3 (instances: "
            "1g.10gb@0,2g.20gb@2,3g.40gb@4)");

  ASSERT_TRUE(gpu.Destroy(4).ok());
  EXPECT_EQ(gpu.ToString(), "1g.10gb@0,2g.20gb@2");
  EXPECT_FALSE(gpu.SliceUsed(6));
  // The freed slices take a 4g? No: slice 0-3 are held. They take a 3g at 4 again.
  EXPECT_TRUE(gpu.CanPlace(**FindProfile(H100(), "3g.40gb"), 4));
  EXPECT_FALSE(gpu.CanPlace(**FindProfile(H100(), "4g.40gb"), 0));
  ASSERT_TRUE(gpu.Destroy(0).ok());
  ASSERT_TRUE(gpu.Destroy(2).ok());
  EXPECT_TRUE(gpu.empty());
  EXPECT_EQ(gpu, Layout(H100()));
  EXPECT_EQ(gpu.Destroy(0).message(),
            "no GPU instance starts at slice 0 on this NVIDIA H100 80GB HBM3 (instances: none)");
}

TEST(MigLayout, IsAValue) {
  Layout a = Build(H100(), {{"4g.40gb", 0}});
  Layout b = a;
  ASSERT_TRUE(b.Create("3g.40gb", 4).ok());
  EXPECT_EQ(a.ToString(), "4g.40gb@0");
  EXPECT_EQ(b.ToString(), "4g.40gb@0,3g.40gb@4");
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(Layout(H100()) == Layout(*FindModel("H100-PCIE-80GB")));
}

TEST(MigLayout, SliceMask) {
  EXPECT_EQ(SliceMask(0, 8), 0xffu);
  EXPECT_EQ(SliceMask(4, 4), 0xf0u);
  EXPECT_EQ(SliceMask(6, 1), 0x40u);
}

}  // namespace
}  // namespace tessera::mig
