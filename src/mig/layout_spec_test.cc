#include "mig/layout_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::mig {
namespace {

TEST(MigLayoutSpec, ParsesTheForms) {
  using Kind = LayoutSpec::Kind;
  struct Case {
    std::string text;
    LayoutSpec want;
  };
  std::vector<Case> cases = {
      {"all-1g.10gb", {.kind = Kind::kAll, .text = "all-1g.10gb", .all_profile = "1g.10gb"}},
      {" all-1g.10gb.me ",
       {.kind = Kind::kAll, .text = "all-1g.10gb.me", .all_profile = "1g.10gb+me"}},
      {"ALL-Balanced", {.kind = Kind::kBalanced, .text = "ALL-Balanced"}},
      {"1g.10gb=2, 2g.20gb ,mig-3g.40gb@4",
       {.kind = Kind::kList,
        .text = "1g.10gb=2, 2g.20gb ,mig-3g.40gb@4",
        .items = {{.profile = "1g.10gb", .count = 2},
                  {.profile = "2g.20gb"},
                  {.profile = "3g.40gb", .start = 4}}}},
      {"1g.10gb @ 0", {.text = "1g.10gb @ 0", .items = {{.profile = "1g.10gb", .start = 0}}}},
  };
  for (const Case& c : cases) {
    Result<LayoutSpec> spec = ParseLayoutSpec(c.text);
    ASSERT_TRUE(spec.ok()) << c.text << ": " << spec.status().message();
    EXPECT_EQ(*spec, c.want) << c.text;
  }
}

TEST(MigLayoutSpec, ParseErrorsSayWhatIsWrong) {
  const std::string forms =
      "; expected all-PROFILE, all-balanced, or a list of PROFILE, PROFILE=COUNT and "
      "PROFILE@START (for example 1g.10gb=2,3g.40gb@4)";
  struct Case {
    std::string text;
    std::string message;  // without the forms
  };
  std::vector<Case> cases = {
      {"", "MIG layout \"\": empty"},
      {"1g.10gb,,2g.20gb", "MIG layout \"1g.10gb,,2g.20gb\": an empty item between commas"},
      {"1g.10gb=0", "MIG layout \"1g.10gb=0\": item \"1g.10gb=0\": the count must be 1-7"},
      {"1g.10gb=8", "MIG layout \"1g.10gb=8\": item \"1g.10gb=8\": the count must be 1-7"},
      {"1g.10gb=two", "MIG layout \"1g.10gb=two\": item \"1g.10gb=two\": the count must be 1-7"},
      {"1g.10gb@8",
       "MIG layout \"1g.10gb@8\": item \"1g.10gb@8\": the start must be a memory slice, 0-7"},
      {"1g.10gb=2@0",
       "MIG layout \"1g.10gb=2@0\": item \"1g.10gb=2@0\" gives both a count and a "
       "start"},
      {"all-everything",
       "MIG layout \"all-everything\": \"everything\" is not a MIG profile name: expected "
       "<g>g.<n>gb or <g>g.<n>gb+me (for example 1g.10gb, mig-3g.40gb, "
       "nvidia.com/mig-1g.10gb.me)"},
      {"3g40gb=1",
       "MIG layout \"3g40gb=1\": \"3g40gb\" is not a MIG profile name: expected <g>g.<n>gb or "
       "<g>g.<n>gb+me (for example 1g.10gb, mig-3g.40gb, nvidia.com/mig-1g.10gb.me)"},
  };
  for (const Case& c : cases) {
    Result<LayoutSpec> spec = ParseLayoutSpec(c.text);
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(spec.status().message(), c.message + forms) << c.text;
  }
}

Result<Layout> Plan(const GpuModel& model, const std::string& text) {
  ASSIGN_OR_RETURN(LayoutSpec spec, ParseLayoutSpec(text));
  return PlanLayout(model, spec);
}

TEST(MigLayoutSpec, PlansLayouts) {
  struct Case {
    std::string model, text, want;
  };
  std::vector<Case> cases = {
      {"H100-SXM5-80GB", "all-1g.10gb",
       "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.10gb@6"},
      {"H100-SXM5-80GB", "all-1g.20gb", "1g.20gb@0,1g.20gb@2,1g.20gb@4,1g.20gb@6"},
      {"H100-SXM5-80GB", "all-3g.40gb", "3g.40gb@0,3g.40gb@4"},
      {"H100-SXM5-80GB", "all-7g.80gb", "7g.80gb@0"},
      {"H100-SXM5-80GB", "all-1g.10gb.me", "1g.10gb+me@6"},
      {"H100-SXM5-80GB", "all-balanced", "2g.20gb@0,1g.10gb@2,1g.10gb@3,3g.40gb@4"},
      {"A100-SXM4-40GB", "all-balanced", "2g.10gb@0,1g.5gb@2,1g.5gb@3,3g.20gb@4"},
      {"H200-141GB", "all-balanced", "2g.35gb@0,1g.18gb@2,1g.18gb@3,3g.71gb@4"},
      {"H100-SXM5-80GB", "1g.10gb=2,2g.20gb,3g.40gb", "2g.20gb@0,1g.10gb@2,1g.10gb@3,3g.40gb@4"},
      {"H100-SXM5-80GB", "4g.40gb,3g.40gb", "4g.40gb@0,3g.40gb@4"},
      // Counted instances go around fixed ones.
      {"H100-SXM5-80GB", "1g.10gb@4,3g.40gb", "3g.40gb@0,1g.10gb@4"},
      {"H100-SXM5-80GB", "1g.10gb@1,2g.20gb,3g.40gb", "1g.10gb@1,2g.20gb@2,3g.40gb@4"},
      {"H100-SXM5-80GB", "2g.20gb,1g.20gb=3", "1g.20gb@0,1g.20gb@2,2g.20gb@4,1g.20gb@6"},
      // The policy's first start for the 1g.20gb (2, which keeps a 3g at 4) leaves four slices
      // for five 1g: the search goes on to 4, then to 6.
      {"H100-SXM5-80GB", "1g.10gb@0,1g.10gb=5,1g.20gb",
       "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.20gb@6"},
      {"H100-SXM5-80GB", "1g.10gb+me,1g.10gb=6",
       "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.10gb+me@6"},
  };
  for (const Case& c : cases) {
    Result<Layout> layout = Plan(*FindModel(c.model), c.text);
    ASSERT_TRUE(layout.ok()) << c.model << " " << c.text << ": " << layout.status().message();
    EXPECT_EQ(layout->ToString(), c.want) << c.model << " " << c.text;
  }
}

TEST(MigLayoutSpec, RefusesLayoutsThatDoNotFit) {
  struct Case {
    std::string model, text, why;
  };
  std::vector<Case> cases = {
      {"H100-SXM5-80GB", "all-1g.5gb",
       "1g.5gb: no such profile on NVIDIA H100 80GB HBM3; allowed: 1g.10gb, 1g.10gb+me, "
       "1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"},
      {"H100-SXM5-80GB", "1g.10gb=7,1g.10gb", "8 x 1g.10gb, but a GPU holds at most 7"},
      {"H100-SXM5-80GB", "1g.10gb+me=2", "2 x 1g.10gb+me, but a GPU holds at most 1"},
      {"H100-SXM5-80GB", "7g.80gb,1g.10gb", "it needs 9 memory slices, the GPU has 8"},
      {"H100-SXM5-80GB", "2g.20gb=3,1g.10gb=2", "it needs 8 compute slices, the GPU has 7"},
      {"H100-SXM5-80GB", "3g.40gb@2",
       "3g.40gb cannot start at slice 2 on NVIDIA H100 80GB HBM3: its placements start at 0, 4"},
      {"H100-SXM5-80GB", "1g.10gb@2,1g.10gb@2",
       "1g.10gb@2 needs memory slice 2, and 1g.10gb@2 holds slice 2"},
      {"H100-SXM5-80GB", "1g.10gb@0,4g.40gb",
       "no arrangement of the valid placements holds them all beside 1g.10gb@0 (4g.40gb starts "
       "at 0)"},
      {"H100-SXM5-80GB", "1g.10gb@2,1g.10gb@5,3g.40gb",
       "no arrangement of the valid placements holds them all beside 1g.10gb@2,1g.10gb@5 "
       "(3g.40gb starts at 0 or 4)"},
      {"H100-SXM5-80GB", "1g.10gb@7",
       "1g.10gb cannot start at slice 7 on NVIDIA H100 80GB HBM3: "
       "its placements start at 0, 1, 2, 3, 4, 5, 6"},
  };
  for (const Case& c : cases) {
    Result<Layout> layout = Plan(*FindModel(c.model), c.text);
    ASSERT_FALSE(layout.ok()) << c.text << " -> " << layout->ToString();
    EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(layout.status().message(), "MIG layout \"" + c.text + "\" does not fit " +
                                             FindModel(c.model)->name + ": " + c.why);
  }
}

// Every model plans every all-<profile> layout with the profile's instance count, the same way
// twice, and a planned layout's text plans back to itself.
TEST(MigLayoutSpec, AllLayoutsAreReachableDeterministicAndReadBack) {
  for (const GpuModel& model : Models()) {
    for (const GpuInstanceProfile& p : model.profiles) {
      std::string text = "all-" + p.name;
      Result<Layout> first = Plan(model, text);
      ASSERT_TRUE(first.ok()) << model.key << " " << text << ": " << first.status().message();
      EXPECT_EQ(static_cast<int>(first->instances().size()), p.max_instances) << text;
      Result<Layout> again = Plan(model, text);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(*again, *first);
      Result<Layout> back = Plan(model, first->ToString());
      ASSERT_TRUE(back.ok()) << back.status().message();
      EXPECT_EQ(*back, *first) << model.key << " " << first->ToString();
    }
  }
}

}  // namespace
}  // namespace tessera::mig
