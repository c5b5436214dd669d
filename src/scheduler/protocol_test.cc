#include "scheduler/protocol.h"

#include <gtest/gtest.h>

namespace tessera::scheduler {
namespace {

TEST(Protocol, ChargesArePeakOfInitAgainstSumOfApp) {
  Allocation a{"n",
               {{"init1", true, ComputeMode::kHard, {{"GPU-a", 6000, 50, 0, false}}},
                {"init2", true, ComputeMode::kHard, {{"GPU-b", 1000, 0, 0, false}}},
                {"app1", false, ComputeMode::kHard, {{"GPU-a", 2000, 20, 0, false}}},
                {"app2",
                 false,
                 ComputeMode::kHard,
                 {{"GPU-a", 3000, 20, 0, false}, {"GPU-c", 500, 0, 0, true}}}}};
  std::vector<GpuCharge> want = {
      {"GPU-a", 6000, 50, false}, {"GPU-b", 1000, 0, false}, {"GPU-c", 500, 0, true}};
  EXPECT_EQ(ChargesOf(a), want);
}

TEST(Protocol, SlotsArePeakOfInitAgainstSumOfApp) {
  Allocation a{"n",
               {{"init",
                 true,
                 ComputeMode::kHard,
                 {{"GPU-a", 1, 0, 0, false}, {"GPU-b", 1, 0, 0, false}},
                 true},
                {"app1", false, ComputeMode::kHard, {{"GPU-a", 1, 0, 0, false}}, true},
                {"app2", false, ComputeMode::kHard, {{"GPU-a", 1, 0, 0, false}}, true},
                {"app3", false, ComputeMode::kHard, {{"GPU-c", 1, 0, 0, false}}}}};
  std::vector<GpuCharge> charges = ChargesOf(a);
  ASSERT_EQ(charges.size(), 3u);
  EXPECT_EQ(charges[0].slots, 2);  // two app containers against one init container
  EXPECT_EQ(charges[1].slots, 1);  // the init container alone
  EXPECT_EQ(charges[2].slots, 0);  // a container that takes no slot
}

}  // namespace
}  // namespace tessera::scheduler
