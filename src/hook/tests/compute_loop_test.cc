// The compute limiter's feedback loop (src/hook/compute_loop.h): the pure arithmetic of a step,
// table-driven.
#include <cstdint>

#include <gtest/gtest.h>

extern "C" {
#include "hook/compute_loop.h"
}

namespace {

constexpr uint32_t kOne = LOOP_GAIN_ONE;

struct Step {
  const char* what;
  uint32_t gain;    // before (0 = 1.0, a fresh region)
  uint32_t recent;  // the gain over the window before (0 = as gain)
  int percent;      // held at (0 = not held)
  double ours, others;
  int held;
  double dt_s;
  double want;  // the gain after, as a factor
};

class LoopStep : public ::testing::TestWithParam<Step> {};

TEST_P(LoopStep, MovesTheGainAsTheTableSays) {
  const Step& s = GetParam();
  loop_gains g{s.gain, s.recent};
  loop_reading r{s.ours, s.others, s.held, s.dt_s};
  loop_step(&g, s.percent, &r);
  EXPECT_NEAR(g.gain == 0 ? kOne : g.gain, s.want * kOne, 1.0) << s.what;  // 0 means 1.0
}

INSTANTIATE_TEST_SUITE_P(
    Table, LoopStep,
    ::testing::Values(
        Step{"at the limit: nothing moves", 0, 0, 30, 30.0, 70, 1, 0.5, 1.0},
        Step{"within the dead band of half a point", kOne, kOne, 30, 30.4, 70, 1, 0.5, 1.0},
        Step{"a point under 70: lowered", kOne, kOne, 70, 69.0, 30, 1, 0.5, 69.0 / 70},
        Step{"over by a tenth, a whole time constant: charges a tenth higher", kOne, kOne, 30, 33.0,
             0, 0, 0.5, 1.1},
        Step{"over, held or not: always raised", kOne, kOne, 30, 33.0, 0, 1, 0.5, 1.1},
        Step{"over by a tenth, a fifth of the time constant", kOne, kOne, 30, 33.0, 0, 0, 0.1,
             1.02},
        Step{"a step longer than the time constant counts as one", kOne, kOne, 30, 33.0, 0, 0, 5.0,
             1.1},
        Step{"under and held: lowered", kOne, kOne, 30, 15.0, 50, 1, 0.5, 0.5},
        Step{"under and held, a fifth of the time constant", kOne, kOne, 30, 24.0, 50, 1, 0.1,
             0.96},
        Step{"under and not held (anti-windup): kept", kOne, kOne, 30, 15.0, 0, 0, 0.5, 1.0},
        Step{"a ratio above 2 is taken as 2", kOne, kOne, 30, 99.0, 0, 0, 0.5, 2.0},
        Step{"a ratio under 1/8 is taken as 1/8", kOne, kOne, 30, 1.5, 90, 1, 0.5, 0.125},
        Step{"from a gain already moved", kOne / 2, kOne / 2, 30, 36.0, 60, 1, 0.5, 0.6},
        Step{"measured under twice the gain: at today's, the share is the limit", kOne / 2, kOne,
             30, 15.0, 80, 1, 0.001, 0.5},
        Step{"measured under half the gain: at today's, the share is the limit", 2 * kOne, kOne, 30,
             60.0, 0, 1, 0.001, 2.0},
        Step{"half a window later the share was measured under today's gain", kOne / 2, kOne, 30,
             12.0, 80, 1, 0.5, 0.2},
        Step{"never under 1/64", kOne / 64, kOne / 64, 30, 15.0, 80, 1, 0.5, 1.0 / 64},
        Step{"never over 16", 16 * kOne, 16 * kOne, 30, 60.0, 0, 0, 0.5, 16.0},
        Step{"not held at a percent (elastic, uncontended): kept", kOne * 2, kOne * 2, 0, 90.0, 0,
             0, 0.5, 2.0},
        Step{"the container did not run: kept", kOne * 2, kOne * 2, 30, 0.0, 90, 1, 0.5, 2.0},
        Step{"the first poll (no step yet): kept", kOne * 2, kOne * 2, 30, 60.0, 0, 0, 0.0, 2.0}),
    [](const ::testing::TestParamInfo<Step>& info) { return "Case" + std::to_string(info.index); });

// `recent` follows the gain: all the way after half a window (the samples' mean age), in part
// before, whether or not the gain moves.
TEST(LoopStep, RecentFollowsTheGain) {
  loop_gains g{2 * kOne, kOne};
  loop_reading none{0, 0, 0, LOOP_WINDOW_S / 4};
  loop_step(&g, 0, &none);
  EXPECT_NEAR(g.recent, 1.5 * kOne, 1.0);
  none.dt_s = LOOP_WINDOW_S;
  loop_step(&g, 0, &none);
  EXPECT_NEAR(g.recent, 2.0 * kOne, 1.0);
}

TEST(LoopContended, WhenTheOthersFilledTheRest) {
  EXPECT_TRUE(loop_contended(30, 70));
  EXPECT_TRUE(loop_contended(10, 85));
  EXPECT_TRUE(loop_contended(40, 42)) << "a busy device less its context switches";
  EXPECT_FALSE(loop_contended(30, 40)) << "the device had idle time: nobody waited";
  EXPECT_FALSE(loop_contended(97, 2)) << "a trace of others' work is noise";
  EXPECT_FALSE(loop_contended(0, 100)) << "the container did not run";
}

}  // namespace
