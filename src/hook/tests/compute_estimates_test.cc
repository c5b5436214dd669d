// A key's expected cost from its spans (src/hook/compute_estimates.h, estimate_fold): the plain
// mean, the moving mean, the trim and the first span's restart.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

extern "C" {
#include "hook/compute_estimates.h"
}

namespace {

constexpr uint64_t kUs = 1000;

// The estimate after `spans` from none, and the spans it counts.
uint64_t Fold(const std::vector<uint64_t>& spans, uint32_t* samples) {
  uint64_t cost = 0;
  *samples = 0;
  for (uint64_t span : spans) cost = estimate_fold(cost, samples, span);
  return cost;
}

TEST(EstimateFold, FirstSpansArePlainlyAveraged) {
  uint32_t n;
  EXPECT_EQ(Fold({20 * kUs, 22 * kUs, 24 * kUs}, &n), 22 * kUs);
  EXPECT_EQ(n, 3u);
}

TEST(EstimateFold, AfterTheFirstSpansEachMovesAnEighth) {
  uint32_t n = MEAN_FIRST;
  EXPECT_EQ(estimate_fold(20 * kUs, &n, 28 * kUs), 21 * kUs);
  EXPECT_EQ(n, MEAN_FIRST + 1u);
  EXPECT_EQ(estimate_fold(20 * kUs, &n, 12 * kUs), 19 * kUs);
}

// A span holding a neighbour's queued kernel or time slice counts as 3/2 of the estimate.
TEST(EstimateFold, ALongSpanCountsForThreeHalvesOfTheEstimate) {
  uint32_t n = MEAN_FIRST;
  EXPECT_EQ(estimate_fold(16 * kUs, &n, 2000 * kUs), 17 * kUs);  // 24 us: +1/8 of 8 us
  n = 1;
  EXPECT_EQ(estimate_fold(20 * kUs, &n, 60 * kUs), 25 * kUs);  // plain mean of 20 and 30
}

// A kernel's own spread under one key (an argument-scaled persistent kernel: 1/2 to 3/2 of its
// mean) is taken whole once the estimate is its mean.
TEST(EstimateFold, ASpanWithinThreeHalvesOfTheEstimateIsTakenWhole) {
  uint32_t n = MEAN_FIRST;
  EXPECT_EQ(estimate_fold(20 * kUs, &n, 30 * kUs), 21250u);
  EXPECT_EQ(estimate_fold(20 * kUs, &n, 10 * kUs), 18750u);
  EXPECT_EQ(estimate_fold(20 * kUs, &n, 38 * kUs), 21250u);  // trimmed to 30 us
}

// The process's first launch held its start-up: a later span under a third of the plain mean
// drops the spans before it.
TEST(EstimateFold, AFirstSpanHoldingTheStartUpIsDropped) {
  uint32_t n;
  EXPECT_EQ(Fold({10000 * kUs, 20 * kUs}, &n), 20 * kUs);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(Fold({10000 * kUs, 20 * kUs, 22 * kUs}, &n), 21 * kUs);
  EXPECT_EQ(n, 2u);
}

TEST(EstimateFold, ASpanAThirdOfThePlainMeanOrMoreIsAveraged) {
  uint32_t n;
  EXPECT_EQ(Fold({30 * kUs, 10 * kUs}, &n), 20 * kUs);
  EXPECT_EQ(n, 2u);
}

// Once the mean moves, a short span is one sample among many: a kernel whose time falls (clocks
// up, a smaller input) is followed, not restarted on.
TEST(EstimateFold, TheMovingMeanIsNeverRestarted) {
  uint32_t n = MEAN_FIRST;
  EXPECT_EQ(estimate_fold(80 * kUs, &n, 8 * kUs), 71 * kUs);
  EXPECT_EQ(n, MEAN_FIRST + 1u);
}

TEST(EstimateFold, ASpanOfNoTimeStillGivesAnEstimate) {
  uint32_t n = 0;
  EXPECT_EQ(estimate_fold(0, &n, 0), 1u);
  n = MEAN_FIRST;
  EXPECT_EQ(estimate_fold(1, &n, 0), 1u);
}

TEST(EstimateFold, TheSampleCountSaturates) {
  uint32_t n = UINT32_MAX;
  EXPECT_EQ(estimate_fold(20 * kUs, &n, 20 * kUs), 20 * kUs);
  EXPECT_EQ(n, UINT32_MAX);
}

}  // namespace
