// The compute limiter's correction by NVML's samples (src/hook/compute_correction.h): the pure
// arithmetic of a poll, and what a falling estimate does to it. The whole loop is exercised by
// hook_compute_test's ...SaturatingFromItsFirstLaunch tests.
#include <gtest/gtest.h>

extern "C" {
#include "hook/compute_correction.h"
}

namespace {

constexpr uint64_t kMs = 1000000;

TEST(CorrectionUpdate, ScalesChargesByWhatNvmlSawOverWhatWasExpected) {
  uint64_t used = 0, expected = 0;
  // NVML saw 40 ms where the estimates said 160 ms: charges are scaled by a quarter.
  EXPECT_EQ(correction_update(40 * kMs, 160 * kMs, &used, &expected), CORRECTION_ONE / 4);
  EXPECT_EQ(used, 40 * kMs);
  EXPECT_EQ(expected, 160 * kMs);
}

TEST(CorrectionUpdate, EstimatesThatHoldAreNotCorrected) {
  uint64_t used = 0, expected = 0;
  EXPECT_EQ(correction_update(160 * kMs, 160 * kMs, &used, &expected), 0u);
  used = expected = 0;
  EXPECT_EQ(correction_update(155 * kMs, 160 * kMs, &used, &expected), 0u) << "within 5%";
  used = expected = 0;
  EXPECT_EQ(correction_update(200 * kMs, 160 * kMs, &used, &expected), 0u)
      << "more used than expected: a charge is never raised above the estimate";
}

TEST(CorrectionUpdate, TooLittleWorkSaysNothing) {
  uint64_t used = 0, expected = 0;
  EXPECT_EQ(correction_update(1 * kMs, 8 * kMs, &used, &expected), 0u);
}

TEST(CorrectionUpdate, AtMostSixtyFourfold) {
  uint64_t used = 0, expected = 0;
  EXPECT_EQ(correction_update(1 * kMs, 100 * kMs, &used, &expected), CORRECTION_ONE / 64);
}

TEST(CorrectionUpdate, OlderPollsWeighHalfAsMuchEachTime) {
  uint64_t used = 0, expected = 0;
  correction_update(40 * kMs, 160 * kMs, &used, &expected);
  // The next poll sees accurate estimates: (20 + 100) / (80 + 100).
  uint32_t c = correction_update(100 * kMs, 100 * kMs, &used, &expected);
  EXPECT_EQ(used, 120 * kMs);
  EXPECT_EQ(expected, 180 * kMs);
  EXPECT_NEAR(c, CORRECTION_ONE * 120.0 / 180.0, 1.0);
}

TEST(CorrectionEstimateChanged, KeepsTheChargeOfTheFunctionAndTheSumsFollowTheEstimate) {
  tessera_region_device d{};
  d.compute_correction = CORRECTION_ONE / 4;
  d.compute_used_avg_ns = 40 * kMs;
  d.compute_estimated_avg_ns = 160 * kMs;
  correction_estimate_changed(&d, 8 * kMs, 4 * kMs, 1.0);  // the estimate halved
  EXPECT_EQ(d.compute_correction, CORRECTION_ONE / 2) << "the factor doubles";
  EXPECT_EQ(d.compute_used_avg_ns, 40 * kMs);
  EXPECT_EQ(d.compute_estimated_avg_ns, 80 * kMs) << "as the new estimate would have counted";
  // The next poll, with nothing new, makes the factor the sums' ratio: what the move made it.
  uint64_t used = d.compute_used_avg_ns * 2, expected = d.compute_estimated_avg_ns * 2;
  EXPECT_EQ(correction_update(0, 0, &used, &expected), d.compute_correction);
  correction_estimate_changed(&d, 8 * kMs, 4 * kMs, 1.0);  // the inflation is gone
  EXPECT_EQ(d.compute_correction, 0u) << "no correction";
}

TEST(CorrectionEstimateChanged, AnyMoveKeepsTheChargeAndScalesTheSums) {
  tessera_region_device d{};
  d.compute_correction = CORRECTION_ONE / 4;
  d.compute_estimated_avg_ns = 160 * kMs;
  correction_estimate_changed(&d, 8 * kMs, 8 * kMs, 1.0);  // no move
  EXPECT_EQ(d.compute_correction, CORRECTION_ONE / 4);
  EXPECT_EQ(d.compute_estimated_avg_ns, 160 * kMs);
  correction_estimate_changed(&d, 16 * kMs, 15 * kMs, 1.0);  // a small fall keeps the charge
  EXPECT_EQ(d.compute_correction, CORRECTION_ONE / 4 * 16 / 15);
  EXPECT_EQ(d.compute_estimated_avg_ns, 150 * kMs);
  tessera_region_device none{};
  none.compute_estimated_avg_ns = 80 * kMs;
  correction_estimate_changed(&none, 8 * kMs, 1 * kMs, 1.0);
  EXPECT_EQ(none.compute_correction, 0u);
  EXPECT_EQ(none.compute_estimated_avg_ns, 10 * kMs) << "the sums follow without a correction too";
}

// The growth of the expected-time counter since its snapshots (the last poll, the newest sample
// taken into account) counts at the new estimate, so the poll after a move compares like with like.
TEST(CorrectionEstimateChanged, TheCounterGrowthSinceItsSnapshotsCountsAtTheNewEstimate) {
  tessera_region_device d{};
  d.compute_estimated_ns = 1000 * kMs;
  d.compute_seen_estimated_ns = 900 * kMs;
  d.compute_poll_estimated_ns = 960 * kMs;
  correction_estimate_changed(&d, 4 * kMs, 2 * kMs, 1.0);  // halved
  EXPECT_EQ(d.compute_seen_estimated_ns, 950 * kMs);
  EXPECT_EQ(d.compute_poll_estimated_ns, 980 * kMs);
  correction_estimate_changed(&d, 2 * kMs, 8 * kMs, 1.0);  // four times as long
  EXPECT_EQ(d.compute_seen_estimated_ns, 800 * kMs);
  EXPECT_EQ(d.compute_poll_estimated_ns, 920 * kMs);
  correction_estimate_changed(&d, 1 * kMs, 64 * kMs, 1.0);
  EXPECT_EQ(d.compute_seen_estimated_ns, 0u) << "never below the counter's start";
  tessera_region_device unknown{};
  unknown.compute_estimated_ns = 1000 * kMs;
  unknown.compute_seen_estimated_ns = CORRECTION_UNALIGNED;
  correction_estimate_changed(&unknown, 4 * kMs, 2 * kMs, 1.0);
  EXPECT_EQ(unknown.compute_seen_estimated_ns, CORRECTION_UNALIGNED) << "not known: left so";
}

TEST(CorrectionEstimateChanged, ARiseKeepsTheChargeUntilNvmlConfirmsIt) {
  tessera_region_device d{};
  d.compute_used_avg_ns = 40 * kMs;
  d.compute_estimated_avg_ns = 40 * kMs;
  // A window of spans that were all inflated: the estimate rose eightfold. The charge stays.
  correction_estimate_changed(&d, 2 * kMs, 16 * kMs, 1.0);
  EXPECT_EQ(d.compute_correction, CORRECTION_ONE / 8);
  EXPECT_EQ(d.compute_estimated_avg_ns, 320 * kMs);
  // NVML then sees the kernels take what they took: the factor stays where the move put it.
  uint64_t used = d.compute_used_avg_ns, expected = d.compute_estimated_avg_ns;
  EXPECT_EQ(correction_update(40 * kMs, 320 * kMs, &used, &expected), CORRECTION_ONE / 8);
  // The estimate falls back: no correction is left.
  correction_estimate_changed(&d, 16 * kMs, 2 * kMs, 1.0);
  EXPECT_EQ(d.compute_correction, 0u);
  // A rise beyond the floor is corrected only down to it.
  correction_estimate_changed(&d, 1 * kMs, 100 * kMs, 1.0);
  EXPECT_EQ(d.compute_correction, CORRECTION_ONE / 64);
}

TEST(CorrectionEstimateChanged, AMoveCountsByTheKeysShareOfTheExpectedTime) {
  tessera_region_device d{};
  d.compute_correction = CORRECTION_ONE * 2 / 3;
  d.compute_estimated_avg_ns = 60 * kMs;
  // A 1 us kernel launched beside 4 ms ones (0.025% of the expected time) doubles its estimate:
  // the 4 ms kernels' charge stays.
  correction_estimate_changed(&d, 1000, 2000, 0.00025);
  EXPECT_NEAR(d.compute_correction, CORRECTION_ONE * 2 / 3 / 1.00025, 1.0);
  EXPECT_NEAR(d.compute_estimated_avg_ns, 60 * kMs * 1.00025, 1.0);
  // A key with half the expected time falls from 6 to 4 ms: the expected time shrinks by a sixth.
  correction_estimate_changed(&d, 6 * kMs, 4 * kMs, 0.5);
  EXPECT_NEAR(d.compute_correction, CORRECTION_ONE * 2 / 3 / 1.00025 / (1 - 0.5 / 3), 1.0);
  EXPECT_NEAR(d.compute_estimated_avg_ns, 60 * kMs * 1.00025 * (1 - 0.5 / 3), 2.0);
}

TEST(CorrectionCap, AHardContainerSeenAboveItsPercentIsChargedMore) {
  const uint32_t c = CORRECTION_ONE / 2;
  // 300 ms used in 1 s of periods: 30%, at a 30% limit the correction stands.
  EXPECT_EQ(correction_cap(c, 300 * kMs, 1000000, 30), c);
  // 330 ms: 10% over, so the charges were 10% too small.
  EXPECT_NEAR(correction_cap(c, 330 * kMs, 1000000, 30), c * 1.1, 1.0);
  // So far over that no correction is left.
  EXPECT_EQ(correction_cap(c, 600 * kMs, 1000000, 30), 0u);
  EXPECT_EQ(correction_cap(0, 600 * kMs, 1000000, 30), 0u) << "no correction: nothing to cap";
  EXPECT_EQ(correction_cap(c, 600 * kMs, 1000000, 0), c) << "no hard limit: no ceiling";
  EXPECT_EQ(correction_cap(c, 600 * kMs, 0, 30), c) << "no period yet";
}

TEST(CorrectionPeriodContended, OthersFillingTheDeviceBesideTheContainerIsContention) {
  EXPECT_TRUE(correction_period_contended(30, 70));
  EXPECT_TRUE(correction_period_contended(10, 85));
  EXPECT_FALSE(correction_period_contended(30, 40)) << "the device had idle time: nobody waited";
  EXPECT_FALSE(correction_period_contended(97, 2)) << "a trace of others' work is noise";
  EXPECT_FALSE(correction_period_contended(0, 100)) << "the container did not run";
}

}  // namespace
