// The compute limiter's feedback loop (src/hook/compute_loop.h): the pure arithmetic of a step,
// table-driven.
#include <sys/types.h>

#include <cstdint>
#include <vector>

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
  loop_gains g{s.gain, s.recent, 0, 0};
  loop_reading r{};
  r.ours = s.ours;
  r.others = s.others;
  r.held = s.held;
  r.dt_s = s.dt_s;
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
  loop_gains g{2 * kOne, kOne, 0, 0};
  loop_reading none{};
  none.dt_s = LOOP_WINDOW_S / 4;
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

// --- what NVML's samples say (loop_measure) ----------------------------------------------------

constexpr uint64_t kNow = 1'700'000'000'000'000;  // CLOCK_REALTIME us, as NVML stamps
constexpr uint64_t kLongAgo = kNow - 3'600'000'000;
constexpr uint64_t kMs = 1000;

struct Sample {
  unsigned pid;
  uint64_t age_ms;  // before kNow
  unsigned util;
};

struct Measured {
  int ok;
  loop_reading r;
};

Measured Measure(const std::vector<Sample>& in, uint64_t start_us, std::vector<pid_t> ours,
                 const loop_history* history = nullptr, uint64_t switch_us = 0) {
  std::vector<nvmlProcessUtilizationSample_t> samples;
  for (const Sample& s : in) {
    nvmlProcessUtilizationSample_t x{};
    x.pid = s.pid;
    x.timeStamp = kNow - s.age_ms * kMs;
    x.smUtil = s.util;
    samples.push_back(x);
  }
  Measured m{};
  m.ok = loop_measure(samples.data(), static_cast<unsigned>(samples.size()), kNow, start_us,
                      switch_us, ours.data(), static_cast<int>(ours.size()), history, &m.r);
  return m;
}

// The time a reading covers and its newest sample, in ms before kNow.
void ExpectCovers(const loop_reading& r, uint64_t from_ms, uint64_t to_ms, uint64_t newest_ms) {
  EXPECT_EQ(r.from_us, kNow - from_ms * kMs);
  EXPECT_EQ(r.to_us, kNow - to_ms * kMs);
  EXPECT_EQ(r.newest_us, kNow - newest_ms * kMs);
}

// Sampled every period (each process on its own phase): the mean of the window's samples.
TEST(LoopMeasure, APeriodSampledProcessIsTheMeanOfTheWindow) {
  Measured m = Measure({{7, 2000, 90}, {7, 400, 30}, {7, 233, 20}, {7, 67, 25}}, kLongAgo, {7});
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.r.ours, 25.0);
  EXPECT_DOUBLE_EQ(m.r.others, 0.0);
  // Over the window's periods (1/6 s each): from the start of the oldest to the newest's end.
  ExpectCovers(m.r, 566, 67, 67);
}

TEST(LoopMeasure, APeriodSampledProcessIdleInTheWindowIsNoReading) {
  EXPECT_FALSE(Measure({{7, 2000, 90}, {7, 1833, 90}}, kLongAgo, {7}).ok);
}

// One process per instant (an H200): each process's newest sample, its share of the last second,
// however old within the lookback: a process of four may go seconds without being drawn.
TEST(LoopMeasure, ProcessesSampledOneInstantAtATimeAreTheirNewestSamples) {
  Measured m = Measure({{1, 100, 10}, {2, 500, 10}, {3, 1200, 10}, {4, 2500, 10}, {9, 300, 50}},
                       kLongAgo, {1, 2, 3, 4});
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.r.ours, 40.0);
  EXPECT_DOUBLE_EQ(m.r.others, 50.0);
  // Each sample covers the second before it; the four, weighed by share, cover on average the
  // second that ended 1.075 s ago.
  ExpectCovers(m.r, 2075, 1075, 100);
}

TEST(LoopMeasure, SamplesOlderThanTheLookbackAreNotRead) {
  EXPECT_FALSE(Measure({{7, 3500, 30}}, kLongAgo, {7}).ok);
}

TEST(LoopMeasure, AShareAboveAHundredIsAHundred) {
  Measured m = Measure({{7, 100, 130}}, kLongAgo, {7});
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.r.ours, 100.0);
}

// A sample of the last second taken half a second after the container's first launch holds half
// a second of idle: taken over the half second it covers.
TEST(LoopMeasure, AFirstSecondSampleIsTakenOverTheTimeSinceTheStart) {
  Measured m = Measure({{7, 100, 15}}, kNow - 600 * kMs, {7});
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.r.ours, 30.0);
  ExpectCovers(m.r, 600, 100, 100);
}

TEST(LoopMeasure, ASampleTooSoonAfterTheStartIsNoReading) {
  EXPECT_FALSE(Measure({{7, 100, 15}}, kNow - 300 * kMs, {7}).ok);
}

// Another process's samples are not the container's: its start does not apply to them.
TEST(LoopMeasure, OthersAreReadWhateverTheContainersStart) {
  Measured m = Measure({{7, 100, 40}, {9, 50, 30}}, kNow - 1500 * kMs, {7});
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.r.others, 30.0);
}

// Until each of the container's processes can be read, a reading would miss one: none.
TEST(LoopMeasure, NoReadingWhileOneOfTheContainersProcessesCannotBeReadYet) {
  EXPECT_FALSE(Measure({{7, 100, 40}, {8, 1100, 40}}, kNow - 1200 * kMs, {7, 8}).ok);
}

// Sampled every period: a period that began before the start is not read; the next one is.
TEST(LoopMeasure, APeriodThatBeganBeforeTheStartIsNotRead) {
  const uint64_t start = kNow - 300 * kMs;  // periods of 1/6 s end 366, 200 and 33 ms ago
  EXPECT_FALSE(Measure({{7, 366, 10}, {7, 200, 50}}, start, {7}).ok);
  Measured m = Measure({{7, 366, 10}, {7, 200, 50}, {7, 33, 30}}, start, {7});
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.r.ours, 30.0);
}

// After the percent changed (issue 36), a sample that covers time before the switch measured the
// old share, not idleness: sampled every period, a period that began before it is not read, as
// before a start; the next one is.
TEST(LoopMeasure, APeriodThatBeganBeforeAPercentChangeIsNotRead) {
  const uint64_t switched = kNow - 300 * kMs;  // periods of 1/6 s end 366, 200 and 33 ms ago
  EXPECT_FALSE(Measure({{7, 366, 30}, {7, 200, 60}}, kLongAgo, {7}, nullptr, switched).ok);
  Measured m = Measure({{7, 366, 30}, {7, 200, 45}, {7, 33, 60}}, kLongAgo, {7}, nullptr, switched);
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.r.ours, 60.0);
}

// Sampled one instant at a time, a sample holds the second before it: until a whole second has
// passed since the switch, it mixes the old share with the new, and is not read (a start's rule,
// which reads the time before as idle and scales the rest up, would read 30% then 60% as 90%).
TEST(LoopMeasure, ASecondsShareThatReachesBackBeforeAPercentChangeIsNotRead) {
  const uint64_t switched = kNow - 600 * kMs;
  EXPECT_FALSE(Measure({{7, 100, 45}}, kLongAgo, {7}, nullptr, switched).ok);
  Measured m = Measure({{7, 100, 45}}, kLongAgo, {7}, nullptr, kNow - 1100 * kMs);
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.r.ours, 45.0);
  // Others' samples are not the container's: the switch does not apply to them.
  Measured others = Measure({{7, 100, 60}, {9, 50, 30}}, kLongAgo, {7}, nullptr, kNow - 1200 * kMs);
  ASSERT_TRUE(others.ok);
  EXPECT_DOUBLE_EQ(others.r.others, 30.0);
}

// A reading measured under another gain than today's is taken to today's: the gain the process
// saw over the time the reading covers, when it knows.
TEST(LoopStep, TheShareIsTakenFromTheGainThenToTodays) {
  loop_gains g{kOne / 2, kOne / 2, 0, 0};
  loop_reading r{};
  r.ours = 15.0;
  r.held = 1;
  r.dt_s = 0.5;
  r.gain_then = kOne;  // measured under twice today's charges: at today's, 30%
  loop_step(&g, 30, &r);
  EXPECT_NEAR(g.gain, kOne / 2, 1.0);
}

// A share that stays under (or over) the limit in readings measured wholly after the steps
// against it began follows the gain less than 1 / gain: each step goes further, 2 times and one
// more per whole measure's length since, at most to the whole ratio; a step the other way, a
// share at the limit or one that did not use its share starts again.
TEST(LoopStep, StepsOneWayGoFurtherOnceAReadingLiesWhollyAfterTheFirst) {
  constexpr uint64_t kT0 = kNow, kWindow = 500 * kMs, kEvery = 200 * kMs;
  loop_gains g{kOne, kOne, 0, 0};
  // (1 - 0.9) x 0.2 s x n / 0.5 s at the k-th poll: n is 1 while the reading's measure began
  // before the first step (k < 3), then 2 + whole windows since it (3 from k = 5), and dt x n at
  // most 0.5 s (the whole ratio, from n = 3).
  const double falls[] = {0.04, 0.04, 0.04, 0.08, 0.08, 0.10, 0.10, 0.10, 0.10};
  double want = 1.0;
  loop_reading under{};
  for (int k = 0; k < 9; ++k) {
    under.ours = 27.0;  // of 30: a ratio of 0.9
    under.held = 1;
    under.dt_s = 0.2;
    under.now_us = kT0 + k * kEvery;
    under.from_us = under.now_us - kWindow;
    under.to_us = under.now_us;
    under.gain_then = g.gain;  // measured under today's gain: the ratio stays 0.9
    loop_step(&g, 30, &under);
    want *= 1.0 - falls[k];
    EXPECT_NEAR(g.gain, want * kOne, 2.0) << "poll " << k;
  }
  EXPECT_EQ(g.streak, -1);
  EXPECT_EQ(g.streak_us, kT0);

  loop_reading over = under;
  over.ours = 33.0;
  over.now_us += kEvery;
  over.from_us += kEvery;
  over.to_us += kEvery;
  over.gain_then = g.gain;
  loop_step(&g, 30, &over);
  EXPECT_EQ(g.streak, 1) << "a step the other way starts again";
  EXPECT_EQ(g.streak_us, over.now_us);
  EXPECT_NEAR(g.gain, want * 1.04 * kOne, 2.0);

  loop_reading at = over;
  at.ours = 30.2;
  at.gain_then = g.gain;
  loop_step(&g, 30, &at);
  EXPECT_EQ(g.streak, 0) << "at the limit";

  loop_reading idle = under;
  idle.held = 0;
  idle.gain_then = g.gain;
  g.streak = -1;
  loop_step(&g, 30, &idle);
  EXPECT_EQ(g.streak, 0) << "it did not use its share";

  g.streak = 1;
  loop_step(&g, 0, &over);
  EXPECT_EQ(g.streak, 0) << "not held at a percent (elastic, uncontended)";
}

// NVML's share of the last second (one process per instant) read every 0.2 s: each reading still
// covers the time before the first step against it for a second, and the steps stay single.
TEST(LoopStep, ReadingsThatCoverTimeBeforeTheStepsDoNotGoFurther) {
  loop_gains g{kOne, kOne, 0, 0};
  double want = 1.0;
  for (int k = 0; k < 5; ++k) {
    loop_reading r{};
    r.ours = 60.0;  // of 75: a ratio of 0.8, lagging the steps
    r.held = 1;
    r.dt_s = 0.2;
    r.now_us = kNow + k * 200 * kMs;
    r.from_us = r.now_us - 1000 * kMs;
    r.to_us = r.now_us;
    r.gain_then = g.gain;
    loop_step(&g, 75, &r);
    want *= 1.0 - 0.2 * 0.2 / 0.5;
    EXPECT_NEAR(g.gain, want * kOne, 2.0) << "poll " << k;
  }
}

// Each process's share was measured under the gains of its own sample's second.
TEST(LoopMeasure, TheGainThenIsEachProcesssWeighedByItsShare) {
  loop_history h{};
  loop_history_note(&h, kNow - 3500 * kMs, kOne);
  loop_history_note(&h, kNow - 1200 * kMs, kOne / 2);
  Measured m = Measure({{1, 100, 10}, {2, 1500, 30}}, kLongAgo, {1, 2}, &h);
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.r.gain_then, (10 * 0.5 + 30 * 1.0) / 40 * kOne);
  EXPECT_EQ(Measure({{1, 100, 10}, {2, 3000, 30}}, kLongAgo, {1, 2}, &h).r.gain_then, 0.0)
      << "one sample before the history: unknown";
}

TEST(LoopHistory, TheMeanGainOverATimeTheHistoryCovers) {
  loop_history h{};
  loop_history_note(&h, kNow, kOne);
  loop_history_note(&h, kNow + 1000 * kMs, kOne / 2);
  EXPECT_DOUBLE_EQ(loop_history_mean(&h, kNow + 500 * kMs, kNow + 1500 * kMs), 0.75 * kOne);
  EXPECT_DOUBLE_EQ(loop_history_mean(&h, kNow, kNow + 400 * kMs), kOne);
  EXPECT_DOUBLE_EQ(loop_history_mean(&h, kNow + 2000 * kMs, kNow + 3000 * kMs), kOne / 2);
  EXPECT_EQ(loop_history_mean(&h, kNow - 1, kNow + 400 * kMs), 0.0) << "before the history";
}

TEST(LoopHistory, KeepsTheNewestRoundsOnly) {
  loop_history h{};
  for (int i = 0; i < LOOP_HISTORY + 8; ++i) loop_history_note(&h, kNow + i * 200 * kMs, i);
  EXPECT_EQ(loop_history_mean(&h, kNow + 7 * 200 * kMs, kNow + 9 * 200 * kMs), 0.0);
  EXPECT_DOUBLE_EQ(loop_history_mean(&h, kNow + 8 * 200 * kMs, kNow + 10 * 200 * kMs), 8.5);
}

}  // namespace
