#include "mig/policy.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tessera::mig {
namespace {

const GpuModel& H100() {
  return *FindModel("H100-SXM5-80GB");
}

std::vector<std::string> Names(const std::vector<const GpuInstanceProfile*>& profiles) {
  std::vector<std::string> names;
  for (const GpuInstanceProfile* p : profiles) names.push_back(p->name);
  return names;
}

// What a naive allocator does: the smallest fitting profile at its lowest free start.
Result<Choice> FirstFit(const Layout& layout, const Request& request) {
  ASSIGN_OR_RETURN(auto fitting, FittingProfiles(layout.model(), request));
  for (const GpuInstanceProfile* p : fitting) {
    std::vector<int> starts = layout.FreeStarts(*p);
    if (!starts.empty()) return Choice{.profile = p, .start = starts.front()};
  }
  return ResourceExhausted("full");
}

TEST(MigPolicy, FittingProfilesSmallestFirst) {
  struct Case {
    std::string model;
    Request request;
    std::vector<std::string> want;  // empty: an error of `code`
    StatusCode code = StatusCode::kOk;
  };
  std::vector<Case> cases = {
      {"H100-SXM5-80GB",
       {.memory_mib = 8192},
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      // 9984 MiB is just under 10000: the next size up.
      {"H100-SXM5-80GB",
       {.memory_mib = 10000},
       {"1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      // 14% of 7 slices is under one slice; 15% needs two.
      {"H100-SXM5-80GB",
       {.cores_percent = 14},
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H100-SXM5-80GB", {.cores_percent = 15}, {"2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H100-SXM5-80GB",
       {.memory_mib = 4096, .cores_percent = 30},
       {"3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H100-SXM5-80GB", {.memory_mib = 40448, .cores_percent = 50}, {"4g.40gb", "7g.80gb"}},
      {"H100-SXM5-80GB", {.cores_percent = 100}, {"7g.80gb"}},
      {"A100-SXM4-40GB",
       {.memory_mib = 4096},
       {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
      {"H100-SXM5-80GB", {.profile = "nvidia.com/mig-1g.10gb.me"}, {"1g.10gb+me"}},
      {"H100-SXM5-80GB", {.profile = "mig-3g.40gb"}, {"3g.40gb"}},
      {"H100-SXM5-80GB", {.profile = "mig-1g.5gb"}, {}, StatusCode::kFailedPrecondition},
      {"H100-SXM5-80GB", {.memory_mib = 90000}, {}, StatusCode::kFailedPrecondition},
      {"H100-SXM5-80GB", {}, {}, StatusCode::kInvalidArgument},
      {"H100-SXM5-80GB", {.cores_percent = 101}, {}, StatusCode::kInvalidArgument},
      {"H100-SXM5-80GB", {.cores_percent = -1}, {}, StatusCode::kInvalidArgument},
      {"H100-SXM5-80GB", {.memory_mib = 1, .profile = "1g.10gb"}, {}, StatusCode::kInvalidArgument},
      {"H100-SXM5-80GB", {.profile = "mig-huge"}, {}, StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    auto fitting = FittingProfiles(*FindModel(c.model), c.request);
    std::string what = c.model + " " + DescribeRequest(c.request);
    if (c.want.empty()) {
      EXPECT_EQ(fitting.status().code(), c.code) << what;
    } else {
      ASSERT_TRUE(fitting.ok()) << what << ": " << fitting.status().message();
      EXPECT_EQ(Names(*fitting), c.want) << what;
    }
  }
}

TEST(MigPolicy, RefusalsAreFilterReasons) {
  Layout gpu(H100());
  EXPECT_EQ(Choose(gpu, {.memory_mib = 90000}).status().message(),
            "no MIG profile of NVIDIA H100 80GB HBM3 holds 90000 MiB: the largest is 7g.80gb "
            "(81152 MiB, all 7 compute slices)");
  EXPECT_EQ(Choose(gpu, {.profile = "mig-9g.10gb"}).status().message(),
            "mig-9g.10gb: no such profile on NVIDIA H100 80GB HBM3; allowed: 1g.10gb, 1g.10gb+me, "
            "1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb");
  EXPECT_EQ(Choose(gpu, {}).status().message(),
            "a MIG request needs memory, cores or a profile; it asked for nothing");

  ASSERT_TRUE(gpu.Create("3g.40gb", 0).ok());
  ASSERT_TRUE(gpu.Create("2g.20gb", 4).ok());
  ASSERT_TRUE(gpu.Create("1g.10gb+me", 6).ok());
  Result<Choice> big = Choose(gpu, {.memory_mib = 20000});
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(big.status().message(),
            "no free MIG placement for 20000 MiB on NVIDIA H100 80GB HBM3: 1g.20gb (starts 0, 2, "
            "4, 6), 2g.20gb (starts 0, 2, 4), 3g.40gb (starts 0, 4), 4g.40gb (start 0), 7g.80gb "
            "(start 0) are blocked by 3g.40gb@0,2g.20gb@4,1g.10gb+me@6");
  EXPECT_EQ(Choose(gpu, {.profile = "4g.40gb"}).status().message(),
            "no free MIG placement for profile 4g.40gb on NVIDIA H100 80GB HBM3: 4g.40gb (start 0) "
            "is blocked by 3g.40gb@0,2g.20gb@4,1g.10gb+me@6");
  Result<Choice> me = Choose(gpu, {.profile = "1g.10gb+me"});
  EXPECT_EQ(me.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(me.status().message(),
            "no free MIG placement for profile 1g.10gb+me on NVIDIA H100 80GB HBM3: 1g.10gb+me: at "
            "most 1 per GPU (the GPU has one set of media engines), 1 in use");
  // A plain 1g still fits at slice 7? No: no profile starts at 7. Nothing of 1 slice is left.
  EXPECT_EQ(Choose(gpu, {.memory_mib = 1024}).status().code(), StatusCode::kResourceExhausted);
}

// The placement rule on an empty H100: each size where it leaves the most room.
TEST(MigPolicy, PlacementKeepsTheLargeProfilesPossible) {
  struct Case {
    Request request;
    std::string profile;
    int start;
  };
  std::vector<Case> cases = {
      // A 1g at 6 leaves slices 0-5: the 4g (0), a 3g (0), three 2g... at 0-3 it would end the 4g.
      {{.memory_mib = 8192}, "1g.10gb", 6},
      {{.memory_mib = 16384}, "1g.20gb", 6},
      // A 2g at 4 leaves the 4g and a 3g at 0; at 0 or 2 neither.
      {{.cores_percent = 25}, "2g.20gb", 4},
      // A 3g at 4 leaves the 4g at 0; at 0 only another 3g.
      {{.memory_mib = 30000}, "3g.40gb", 4},
      {{.cores_percent = 50}, "4g.40gb", 0},
      {{.memory_mib = 50000}, "7g.80gb", 0},
      {{.profile = "1g.10gb+me"}, "1g.10gb+me", 6},
  };
  for (const Case& c : cases) {
    Result<Choice> choice = Choose(Layout(H100()), c.request);
    ASSERT_TRUE(choice.ok()) << DescribeRequest(c.request) << ": " << choice.status().message();
    EXPECT_EQ(choice->profile->name, c.profile) << DescribeRequest(c.request);
    EXPECT_EQ(choice->start, c.start) << DescribeRequest(c.request);
  }
  // Room: 7g, 4g, 3g, 2g, 1g.20gb, 1g.10gb, 1g.10gb+me free placements after a 1g at 6.
  Layout one(H100());
  ASSERT_TRUE(one.Create("1g.10gb", 6).ok());
  EXPECT_EQ(Room(one), (std::vector<int>{0, 1, 1, 3, 3, 6, 6}));
  EXPECT_EQ(RankedStarts(Layout(H100()), **FindProfile(H100(), "3g.40gb")),
            (std::vector<int>{4, 0}));
}

// A stream of mixed sizes fills the GPU exactly, in the order they come.
TEST(MigPolicy, FillsWithMixedSizes) {
  Layout gpu(H100());
  std::vector<Request> stream = {
      {.memory_mib = 30000}, {.cores_percent = 25}, {.memory_mib = 8192}, {.memory_mib = 9000}};
  for (const Request& r : stream) {
    Result<Choice> c = Choose(gpu, r);
    ASSERT_TRUE(c.ok()) << DescribeRequest(r) << " on " << gpu.ToString() << ": "
                        << c.status().message();
    ASSERT_TRUE(gpu.Create(*c->profile, c->start).ok());
  }
  EXPECT_EQ(gpu.ToString(), "2g.20gb@0,1g.10gb@2,1g.10gb@3,3g.40gb@4");
  EXPECT_EQ(gpu.UsedComputeSlices(), 7);
  EXPECT_EQ(Choose(gpu, {.memory_mib = 1}).status().code(), StatusCode::kResourceExhausted);
}

// The policy places each instance when it comes and never moves one: the same four requests
// with the small one first end with the last refused, though 2g@0,1g@2,1g@3,3g@4 would hold them
// all. The first 1g went to slice 6 (where it keeps the 4g and three 2g placements open), which
// leaves slice 7 to profiles that did not come. Documented in docs/mig.md.
TEST(MigPolicy, PlacesOnlineWithoutMovingInstances) {
  Layout gpu(H100());
  std::vector<Request> stream = {
      {.memory_mib = 8192}, {.memory_mib = 30000}, {.cores_percent = 25}};
  for (const Request& r : stream) {
    Result<Choice> c = Choose(gpu, r);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_TRUE(gpu.Create(*c->profile, c->start).ok());
  }
  EXPECT_EQ(gpu.ToString(), "3g.40gb@0,2g.20gb@4,1g.10gb@6");
  EXPECT_EQ(Choose(gpu, {.memory_mib = 9000}).status().code(), StatusCode::kResourceExhausted);
}

// Two 1g, a 1g.20gb, a 1g, the 1g.20gb leaves, then a 3g: first-fit has put its 1g at 0, 1 and
// 4 and blocks both 3g placements; the policy has kept slices 0-3 free.
TEST(MigPolicy, AvoidsTheFragmentationFirstFitCauses) {
  std::vector<Request> arrive = {
      {.memory_mib = 8000}, {.memory_mib = 8000}, {.memory_mib = 18000}, {.memory_mib = 8000}};
  for (bool policy : {true, false}) {
    Layout gpu(H100());
    std::vector<int> starts;
    for (const Request& r : arrive) {
      Result<Choice> c = policy ? Choose(gpu, r) : FirstFit(gpu, r);
      ASSERT_TRUE(c.ok());
      ASSERT_TRUE(gpu.Create(*c->profile, c->start).ok());
      starts.push_back(c->start);
    }
    ASSERT_TRUE(gpu.Destroy(starts[2]).ok());  // the 1g.20gb
    Result<Choice> three =
        policy ? Choose(gpu, {.profile = "3g.40gb"}) : FirstFit(gpu, {.profile = "3g.40gb"});
    if (policy) {
      EXPECT_EQ(gpu.ToString(), "1g.10gb@4,1g.10gb@5,1g.10gb@6");
      ASSERT_TRUE(three.ok()) << three.status().message();
      EXPECT_EQ(three->start, 0);
    } else {
      EXPECT_EQ(gpu.ToString(), "1g.10gb@0,1g.10gb@1,1g.10gb@4");
      EXPECT_FALSE(three.ok());
    }
  }
}

// Random streams of arrivals and departures on every model: the policy refuses only when no
// fitting profile has a free placement, and what it chooses can be created.
TEST(MigPolicy, RefusesOnlyWhenNothingFits) {
  std::mt19937 rng(34);
  const std::vector<Request> asks = {
      {.memory_mib = 4000},  {.memory_mib = 9000},     {.memory_mib = 15000},
      {.memory_mib = 30000}, {.memory_mib = 60000},    {.cores_percent = 10},
      {.cores_percent = 30}, {.cores_percent = 55},    {.memory_mib = 2048, .cores_percent = 20},
      {.profile = "7g"},     {.profile = "1g.10gb+me"}};
  int placed = 0, refused = 0;
  for (const GpuModel& model : Models()) {
    for (int run = 0; run < 40; ++run) {
      Layout gpu(model);
      for (int step = 0; step < 30; ++step) {
        if (!gpu.empty() && rng() % 3 == 0) {
          const Instance& gone = gpu.instances()[rng() % gpu.instances().size()];
          ASSERT_TRUE(gpu.Destroy(gone.start).ok());
          continue;
        }
        Request r = asks[rng() % asks.size()];
        if (r.profile == "7g") r.profile = model.whole().name;
        if (r.profile == "1g.10gb+me") r.profile = model.profiles[1].name;
        Result<Choice> c = Choose(gpu, r);
        if (c.ok()) {
          ASSERT_TRUE(gpu.Create(*c->profile, c->start).ok()) << gpu.ToString();
          ++placed;
          continue;
        }
        if (c.status().code() == StatusCode::kFailedPrecondition) {  // too big for this model
          EXPECT_FALSE(Choose(Layout(model), r).ok()) << c.status().message();
          continue;
        }
        ASSERT_EQ(c.status().code(), StatusCode::kResourceExhausted) << c.status().message();
        ++refused;
        Result<std::vector<const GpuInstanceProfile*>> fitting = FittingProfiles(model, r);
        ASSERT_TRUE(fitting.ok());
        for (const GpuInstanceProfile* p : *fitting) {
          EXPECT_TRUE(gpu.FreeStarts(*p).empty())
              << model.key << ": refused " << DescribeRequest(r) << " on " << gpu.ToString()
              << " though " << p->name << " has a free placement";
        }
      }
    }
  }
  EXPECT_GT(placed, 1000);
  EXPECT_GT(refused, 100);  // the streams do reach full GPUs
}

}  // namespace
}  // namespace tessera::mig
