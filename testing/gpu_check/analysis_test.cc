#include "analysis.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::gpu_check {
namespace {

using Intervals = std::vector<Interval>;
constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;

TEST(UnionTest, Table) {
  struct Case {
    std::string name;
    Intervals in, want;
  } cases[] = {
      {"empty", {}, {}},
      {"one", {{1, 5}}, {{1, 5}}},
      {"disjoint unsorted", {{10, 20}, {1, 5}}, {{1, 5}, {10, 20}}},
      {"overlapping", {{1, 5}, {3, 8}}, {{1, 8}}},
      {"touching merge", {{1, 5}, {5, 8}}, {{1, 8}}},
      {"contained", {{1, 10}, {2, 3}, {4, 9}}, {{1, 10}}},
      {"empty and reversed dropped", {{4, 4}, {7, 2}, {1, 2}}, {{1, 2}}},
      {"chain", {{5, 7}, {1, 3}, {2, 6}, {9, 10}}, {{1, 7}, {9, 10}}},
  };
  for (const Case& c : cases) EXPECT_EQ(Union(c.in), c.want) << c.name;
}

TEST(SetOperationsTest, Table) {
  struct Case {
    std::string name;
    Intervals a, b;
    int64_t intersection;
    Intervals a_minus_b;
  } cases[] = {
      {"both empty", {}, {}, 0, {}},
      {"b empty", {{0, 10}}, {}, 0, {{0, 10}}},
      {"a empty", {}, {{0, 10}}, 0, {}},
      {"disjoint", {{0, 10}}, {{10, 20}}, 0, {{0, 10}}},
      {"b inside a", {{0, 10}}, {{2, 4}}, 2, {{0, 2}, {4, 10}}},
      {"a inside b", {{2, 4}}, {{0, 10}}, 2, {}},
      {"b spans two of a", {{0, 4}, {6, 10}}, {{3, 7}}, 2, {{0, 3}, {7, 10}}},
      {"several b in one a", {{0, 20}}, {{1, 2}, {5, 6}, {19, 25}}, 3, {{0, 1}, {2, 5}, {6, 19}}},
      {"b before and after", {{10, 20}}, {{0, 5}, {25, 30}}, 0, {{10, 20}}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(IntersectionLength(c.a, c.b), c.intersection) << c.name;
    EXPECT_EQ(IntersectionLength(c.b, c.a), c.intersection) << c.name << " (swapped)";
    EXPECT_EQ(Subtract(c.a, c.b), c.a_minus_b) << c.name;
  }
}

TEST(ClipTest, Table) {
  struct Case {
    std::string name;
    Intervals a;
    Interval window;
    Intervals want;
  } cases[] = {
      {"inside", {{2, 4}}, {0, 10}, {{2, 4}}},
      {"cut both sides", {{0, 4}, {8, 12}}, {2, 10}, {{2, 4}, {8, 10}}},
      {"outside", {{0, 2}, {10, 12}}, {2, 10}, {}},
      {"empty window", {{0, 10}}, {5, 5}, {}},
  };
  for (const Case& c : cases) EXPECT_EQ(Clip(c.a, c.window), c.want) << c.name;
}

TEST(OverlapFractionTest, Table) {
  struct Case {
    std::string name;
    Intervals a, b;
    double want;
  } cases[] = {
      {"empty", {}, {{0, 10}}, 0},
      {"never at once", {{0, 10}}, {{10, 20}}, 0},
      {"identical", {{0, 10}}, {{0, 10}}, 1},
      {"shorter entirely beside", {{0, 100}}, {{10, 20}, {30, 40}}, 1},
      {"half", {{0, 10}}, {{5, 15}}, 0.5},
      {"unsorted, overlapping within one side", {{5, 10}, {0, 6}}, {{0, 5}}, 1},
  };
  for (const Case& c : cases) EXPECT_DOUBLE_EQ(OverlapFraction(c.a, c.b), c.want) << c.name;
}

// `busy` ns every `period` ns from `from` to `to`.
Intervals Periodic(int64_t from, int64_t to, int64_t period, int64_t busy) {
  Intervals out;
  for (int64_t t = from; t < to; t += period) out.push_back({t, t + busy});
  return out;
}

TEST(ShareOfTest, Table) {
  struct Case {
    std::string name;
    Intervals own, others;
    Interval window;
    double percent;
    int64_t excluded_ns;
  } cases[] = {
      {"30% of a second", Periodic(0, 1000 * kMs, 10 * kMs, 3 * kMs), {}, {0, 1000 * kMs}, 30, 0},
      {"all busy", {{0, 10 * kMs}}, {}, {0, 10 * kMs}, 100, 0},
      {"idle", {}, {}, {0, 10 * kMs}, 0, 0},
      {"empty window", {{0, 10}}, {}, {5, 5}, 0, 0},
      {"clipped at both ends",
       {{-5 * kMs, 2 * kMs}, {8 * kMs, 20 * kMs}},
       {},
       {0, 10 * kMs},
       40,
       0},
      {"two streams count once", {{0, 6 * kMs}, {2 * kMs, 8 * kMs}}, {}, {0, 10 * kMs}, 80, 0},
      // A spin kernel preempted for the neighbour's slice: the neighbour's 4 ms are not ours.
      {"neighbour's slice inside a preempted kernel",
       {{0, 6 * kMs}},
       {{1 * kMs, 5 * kMs}},
       {0, 10 * kMs},
       20,
       4 * kMs},
      {"neighbour outside the window",
       {{0, 5 * kMs}},
       {{20 * kMs, 30 * kMs}},
       {0, 10 * kMs},
       50,
       0},
  };
  for (const Case& c : cases) {
    Share s = ShareOf(c.own, c.others, c.window);
    EXPECT_NEAR(s.percent, c.percent, 1e-9) << c.name;
    EXPECT_EQ(s.excluded_ns, c.excluded_ns) << c.name;
    EXPECT_EQ(s.window_ns, c.window.length()) << c.name;
  }
}

TEST(SummarizeTest, Table) {
  struct Case {
    std::string name;
    std::vector<double> values;
    Summary want;
  } cases[] = {
      {"empty", {}, {0, 0, 0, 0, 0, 0}},
      {"one", {7}, {1, 7, 7, 7, 7, 7}},
      {"three unsorted", {3, 1, 2}, {3, 1, 2, 2, 3, 3}},
      {"one to ten", {10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, {10, 1, 5.5, 5, 9, 10}},
      // Nearest rank: p90 of 20 is the 18th value, below both outliers.
      {"twenty, outliers above p90",
       {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 41},
       {20, 1, 3.05, 1, 1, 41}},
      {"ten, p90 the ninth", {1, 1, 1, 1, 1, 1, 1, 1, 5, 9}, {10, 1, 2.2, 1, 5, 9}},
  };
  for (const Case& c : cases) {
    Summary s = Summarize(c.values);
    EXPECT_EQ(s.count, c.want.count) << c.name;
    EXPECT_DOUBLE_EQ(s.min, c.want.min) << c.name;
    EXPECT_DOUBLE_EQ(s.mean, c.want.mean) << c.name;
    EXPECT_DOUBLE_EQ(s.p50, c.want.p50) << c.name;
    EXPECT_DOUBLE_EQ(s.p90, c.want.p90) << c.name;
    EXPECT_DOUBLE_EQ(s.max, c.want.max) << c.name;
  }
}

TEST(DurationsTest, InTheUnitAsked) {
  EXPECT_EQ(Durations({{0, 1500}, {10, 10}}, 1000), (std::vector<double>{1.5, 0}));
}

// A stamps buffer from per-launch (start, end, gaps...) lists, each padded to its record.
std::vector<uint64_t> Records(const std::vector<std::vector<uint64_t>>& launches) {
  std::vector<uint64_t> out;
  for (const std::vector<uint64_t>& l : launches) {
    std::vector<uint64_t> record = l;
    record.resize(kStampsPerLaunch, 0);
    out.insert(out.end(), record.begin(), record.end());
  }
  return out;
}

TEST(IntervalsFromStampsTest, Table) {
  struct Case {
    std::string name;
    std::vector<uint64_t> stamps;
    size_t launches;
    Intervals want;
    size_t missing;
  } cases[] = {
      {"none", {}, 0, {}, 0},
      {"two", Records({{10, 20}, {30, 45}}), 2, {{10, 20}, {30, 45}}, 0},
      {"fewer launches than room", Records({{10, 20}, {30, 45}}), 1, {{10, 20}}, 0},
      {"gaps do not change the span", Records({{10, 90, 20, 60}}), 1, {{10, 90}}, 0},
      {"unwritten (zero), reversed and too many gaps (end 0) skipped",
       Records({{0, 0}, {50, 40}, {60, 70}, {80, 0, 81, 82}}),
       4,
       {{60, 70}},
       3},
      {"launches past the buffer are missing", Records({{10, 20}}), 3, {{10, 20}}, 2},
      {"a record cut short is missing", {10, 20, 0}, 1, {}, 1},
  };
  for (const Case& c : cases) {
    size_t missing = 99;
    EXPECT_EQ(IntervalsFromStamps(c.stamps, c.launches, &missing), c.want) << c.name;
    EXPECT_EQ(missing, c.missing) << c.name;
  }
}

TEST(GapsFromStampsTest, EachLaunchsGapsInsideItsSpan) {
  std::vector<uint64_t> stamps = Records({
      {100, 1000, 200, 400, 600, 700},  // two gaps
      {1000, 1100},                     // none
      {0, 0, 5, 6},                     // unwritten launch: its slots are not read
      {2000, 2500, 1900, 2100},         // a gap reaching before the start is clipped
      {3000, 3100, 3050, 3040},         // a reversed slot ends the list
  });
  EXPECT_EQ(GapsFromStamps(stamps, 5), (Intervals{{200, 400}, {600, 700}, {2000, 2100}}));
  // Every slot used.
  std::vector<uint64_t> full = {0, 100};
  for (uint64_t g = 0; g < kGapSlots; ++g) {
    full.push_back(10 * g + 1);
    full.push_back(10 * g + 5);
  }
  full[0] = 1;
  EXPECT_EQ(GapsFromStamps(full, 1).size(), kGapSlots);
}

TEST(RunningTest, SpansLessTheirGaps) {
  // Two kernels back to back, the first switched out for 300 ns of another context's slice.
  Intervals spans = {{0, 1000}, {1000, 1500}};
  EXPECT_EQ(Running(spans, {{200, 500}}), (Intervals{{0, 200}, {500, 1500}}));
  EXPECT_EQ(Length(Running(spans, {{200, 500}})), 1200);
  EXPECT_EQ(Running(spans, {}), (Intervals{{0, 1500}}));
}

TEST(CountPreemptedTest, SpansHoldingAGap) {
  Intervals spans = {{0, 100}, {100, 200}, {300, 400}, {500, 600}};
  EXPECT_EQ(CountPreempted(spans, {{150, 160}, {350, 360}, {370, 380}}), 2u);
  EXPECT_EQ(CountPreempted(spans, {}), 0u);
  EXPECT_EQ(CountPreempted(spans, {{200, 300}}), 0u) << "a gap between kernels is no one's";
}

// Two time-sliced processes: A has the device for `slice` ns, then after `gap` ns B has it, and
// so on, `slices` times in all, each running back-to-back kernels of `kernel` ns (with 1 us
// between). With `preempt`, the kernel running at a slice's end is cut and resumes (ending at
// once) at the start of the process's next slice.
struct Timeline {
  Intervals a, b;
};
Timeline TimeSliced(int64_t slice, int64_t gap, int64_t kernel, int slices, bool preempt) {
  Timeline t;
  Intervals* own[2] = {&t.a, &t.b};
  int64_t pending_start[2] = {-1, -1};  // a preempted kernel's start, per process
  int64_t at = 0;
  for (int k = 0; k < slices; ++k) {
    int p = k % 2;
    int64_t end = at + slice, cursor = at;
    if (pending_start[p] >= 0) {  // the preempted kernel resumes and ends at once
      own[p]->push_back({pending_start[p], at + kUs});
      pending_start[p] = -1;
      cursor = at + 2 * kUs;
    }
    while (cursor + kernel <= end) {
      own[p]->push_back({cursor, cursor + kernel});
      cursor += kernel + kUs;
    }
    if (preempt && cursor < end) pending_start[p] = cursor;
    at = end + gap;
  }
  return t;
}

TEST(EstimateSlicesTest, Table) {
  struct Case {
    std::string name;
    Timeline t;
    size_t runs;       // complete runs
    double slice_ms;   // p50 of A and of B
    double slice_tol;  // ms
    double gap_us;     // p50
    double gap_tol;    // us
    size_t preempted;
  } cases[] = {
      // 2 ms slices of 50 us kernels (1 us apart: 39 fit in a slice), 25 us switches.
      {"2 ms slices, kernels end at slice ends", TimeSliced(2 * kMs, 25 * kUs, 50 * kUs, 10, false),
       8, 2.0, 0.06, 25, 52, 0},
      // The same with the last kernel of each slice preempted: its start belongs to this run,
      // its end to the next run of the same process.
      {"2 ms slices, preempted at the ends", TimeSliced(2 * kMs, 25 * kUs, 50 * kUs, 10, true), 8,
       2.0, 0.06, 25, 52, 8},
      {"1 ms slices, 100 us switches", TimeSliced(1 * kMs, 100 * kUs, 20 * kUs, 12, false), 10, 1.0,
       0.03, 100, 22, 0},
  };
  for (const Case& c : cases) {
    SliceEstimate e = EstimateSlices(c.t.a, c.t.b, 2 * kUs);
    EXPECT_EQ(e.runs.size(), c.runs) << c.name;
    EXPECT_NEAR(e.slice_ms[0].p50, c.slice_ms, c.slice_tol) << c.name;
    EXPECT_NEAR(e.slice_ms[1].p50, c.slice_ms, c.slice_tol) << c.name;
    // A slice is never overestimated.
    EXPECT_LE(e.slice_ms[0].max, c.slice_ms + 1e-9) << c.name;
    EXPECT_NEAR(e.gap_us.p50, c.gap_us, c.gap_tol) << c.name;
    EXPECT_GE(e.gap_us.min, c.gap_us - 1e-9) << c.name;  // nor a gap underestimated
    EXPECT_EQ(e.preempted, c.preempted) << c.name;
    for (size_t k = 0; k + 1 < e.runs.size(); ++k) {
      EXPECT_NE(e.runs[k].owner, e.runs[k + 1].owner) << c.name << ": runs alternate";
    }
  }
}

TEST(EstimateSlicesTest, WithoutTurns) {
  // MPS-like: both processes' kernels run at once; and one after the other: no complete runs.
  Intervals a = Periodic(0, 10 * kMs, 100 * kUs, 99 * kUs);
  SliceEstimate concurrent = EstimateSlices(a, a, 2 * kUs);
  EXPECT_GT(concurrent.overlap_fraction, 0.99);
  EXPECT_EQ(concurrent.preempted, 0u);  // each lies within one of the other's: run beside it
  SliceEstimate sequential =
      EstimateSlices(a, Periodic(20 * kMs, 30 * kMs, 100 * kUs, 99 * kUs), 2 * kUs);
  EXPECT_TRUE(sequential.runs.empty());
  EXPECT_EQ(sequential.gap_us.count, 1u);
  EXPECT_DOUBLE_EQ(sequential.overlap_fraction, 0);
  EXPECT_TRUE(EstimateSlices({}, {}, 0).runs.empty());
}

TEST(EstimateSlicesTest, LongKernelsPreemptedOverlapWholly) {
  // 20 ms spin kernels under 2 ms slices: each ends 20 ms after it started, whoever ran between.
  Intervals a, b;
  for (int k = 0; k < 10; ++k) {
    a.push_back({k * 20 * kMs, (k + 1) * 20 * kMs});
    b.push_back({k * 20 * kMs + 2 * kMs, (k + 1) * 20 * kMs + 2 * kMs});
  }
  SliceEstimate e = EstimateSlices(a, b, 2 * kUs);
  EXPECT_EQ(e.preempted, 20u);
  EXPECT_GT(e.overlap_fraction, 0.85);
}

TEST(EstimateOffsetTest, Table) {
  struct Case {
    std::string name;
    std::vector<ClockProbe> probes;
    bool valid;
    int64_t offset, uncertainty, device;
  } cases[] = {
      {"none", {}, false, 0, 0, 0},
      {"one", {{1000, 5500, 2000}}, true, 4000, 500, 5500},
      {"shortest round trip wins",
       {{1000, 9000, 5000}, {10000, 14100, 10200}, {20000, 25000, 21000}},
       true,
       4000,
       100,
       14100},
      {"unwritten stamp and reversed readings ignored",
       {{1000, 0, 1001}, {3000, 9000, 2000}, {5000, 8000, 6000}},
       true,
       2500,
       500,
       8000},
  };
  for (const Case& c : cases) {
    ClockOffset o = EstimateOffset(c.probes);
    EXPECT_EQ(o.valid, c.valid) << c.name;
    if (!c.valid) continue;
    EXPECT_EQ(o.device_minus_host_ns, c.offset) << c.name;
    EXPECT_EQ(o.uncertainty_ns, c.uncertainty) << c.name;
    EXPECT_EQ(o.device_ns, c.device) << c.name;
  }
}

TEST(ClockMapTest, OneOffsetOrTwoWithDrift) {
  EXPECT_FALSE(ClockMap().valid());
  EXPECT_FALSE(ClockMap(ClockOffset{}, ClockOffset{}).valid());
  ClockOffset before{true, 1'000'000, 500, 10};
  ClockMap one(before, ClockOffset{});
  ASSERT_TRUE(one.valid());
  EXPECT_EQ(one.ToHost(1'000'000), 999'500);
  EXPECT_EQ(one.ToHost(Interval{2'000'000, 3'000'000}), (Interval{1'999'500, 2'999'500}));
  EXPECT_DOUBLE_EQ(one.drift_ppm(), 0);
  ClockMap only_after(ClockOffset{}, before);
  EXPECT_EQ(only_after.ToHost(1'000'000), 999'500);
  // The device gains 100 ns over 1 ms of its time: 100 ppm.
  ClockOffset after{true, 2'000'000, 600, 10};
  ClockMap two(before, after);
  EXPECT_EQ(two.ToHost(1'000'000), 999'500);
  EXPECT_EQ(two.ToHost(1'500'000), 1'499'450);
  EXPECT_EQ(two.ToHost(2'000'000), 1'999'400);
  EXPECT_NEAR(two.drift_ppm(), 100, 1e-9);
}

TEST(NvmlSamplesTest, DedupeSpacingAlignment) {
  std::vector<NvmlSample> polled = {
      {2, 1'000'000, 60}, {1, 1'500'000, 30}, {1, 1'000'000, 20}, {1, 1'500'000, 30},
      {2, 2'000'000, 55}, {1, 2'700'000, 35}, {2, 1'000'000, 60},
  };
  std::vector<NvmlSample> s = Dedupe(polled);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0], (NvmlSample{1, 1'000'000, 20}));
  EXPECT_EQ(s[4], (NvmlSample{2, 2'000'000, 55}));

  struct SpacingCase {
    uint32_t pid;
    size_t count;
    double min, max;
  } spacing[] = {{1, 2, 500, 1200}, {2, 1, 1000, 1000}, {3, 0, 0, 0}};
  for (const SpacingCase& c : spacing) {
    Summary got = StampSpacingMs(s, c.pid);
    EXPECT_EQ(got.count, c.count) << c.pid;
    EXPECT_DOUBLE_EQ(got.min, c.min) << c.pid;
    EXPECT_DOUBLE_EQ(got.max, c.max) << c.pid;
  }
  // PID 1 at 1.0, 1.5, 2.7 s against PID 2 at 1.0, 2.0 s: 0, 500, 700 ms.
  Summary align = AlignmentMs(s, 1, 2);
  EXPECT_EQ(align.count, 3u);
  EXPECT_DOUBLE_EQ(align.min, 0);
  EXPECT_DOUBLE_EQ(align.p50, 500);
  EXPECT_DOUBLE_EQ(align.max, 700);
  EXPECT_EQ(AlignmentMs(s, 1, 3).count, 0u);
}

TEST(CompareWithTruthTest, Table) {
  // PID 7 busy 3 ms of every 10 ms (30%) from 0 to 4 s; PID 8 busy the other 7 ms.
  Intervals seven = Periodic(0, 4000 * kMs, 10 * kMs, 3 * kMs);
  Intervals eight = Periodic(3 * kMs, 4000 * kMs, 10 * kMs, 7 * kMs);
  auto samples = [](uint32_t pid, std::vector<std::pair<uint64_t, uint32_t>> at_ms_util) {
    std::vector<NvmlSample> out;
    for (auto [ms, util] : at_ms_util) out.push_back({pid, ms * 1000, util});
    return out;
  };
  struct Case {
    std::string name;
    std::vector<NvmlSample> samples;
    Intervals own, others;
    Interval window;
    uint64_t period_us;
    size_t periods;
    double nvml, truth, covered_s, max_error;
  } cases[] = {
      {"exact since previous",
       samples(7, {{500, 99}, {1000, 30}, {1500, 30}, {2000, 30}}),
       seven,
       {},
       {0, 4000 * kMs},
       0,
       3,
       30,
       30,
       1.5,
       0},
      {"over-reporting",
       samples(7, {{1000, 0}, {2000, 45}, {3000, 45}}),
       seven,
       {},
       {0, 4000 * kMs},
       0,
       2,
       45,
       30,
       2,
       15},
      {"weighted by period length",
       samples(7, {{0, 0}, {1000, 20}, {4000, 40}}),
       seven,
       {},
       {0, 4000 * kMs},
       0,
       2,
       35,
       30,
       4,
       10},
      {"fixed 1 s periods",
       samples(7, {{1000, 30}, {2000, 30}, {2500, 30}}),
       seven,
       {},
       {0, 4000 * kMs},
       1'000'000,
       3,
       30,
       30,
       3,
       0},
      {"periods outside the window left out",
       samples(7, {{1000, 30}, {2000, 30}, {5000, 0}}),
       seven,
       {},
       {0, 4000 * kMs},
       0,
       1,
       30,
       30,
       1,
       0},
      {"the neighbour's time inside our spans is not ours",
       samples(7, {{1000, 30}, {2000, 30}}),
       {{0, 4000 * kMs}},
       eight,
       {0, 4000 * kMs},
       0,
       1,
       30,
       30,
       1,
       0},
      {"another pid's samples ignored",
       samples(8, {{1000, 70}, {2000, 70}}),
       seven,
       {},
       {0, 4000 * kMs},
       0,
       0,
       0,
       0,
       0,
       0},
  };
  for (const Case& c : cases) {
    NvmlVsTruth r = CompareWithTruth(c.samples, 7, c.own, c.others, c.window, c.period_us);
    EXPECT_EQ(r.periods, c.periods) << c.name;
    EXPECT_NEAR(r.nvml_percent, c.nvml, 1e-6) << c.name;
    EXPECT_NEAR(r.truth_percent, c.truth, 1e-6) << c.name;
    EXPECT_NEAR(r.covered_s, c.covered_s, 1e-9) << c.name;
    EXPECT_NEAR(r.abs_error_points.max, c.max_error, 1e-6) << c.name;
  }
}

TEST(WithinTest, Table) {
  struct Case {
    double value, expect, tolerance;
    bool want;
  } cases[] = {{30, 30, 3, true},     {33, 30, 3, true},    {27, 30, 3, true},
               {33.01, 30, 3, false}, {26.9, 30, 3, false}, {0, 0, 0, true}};
  for (const Case& c : cases) {
    EXPECT_EQ(Within(c.value, c.expect, c.tolerance), c.want) << c.value << " vs " << c.expect;
  }
}

TEST(SwitchedNsTest, GapsThatNeitherRanIn) {
  // A runs 0-2 ms, is switched out 2-5 ms; B runs 2.2-4.8 ms: the switch cost 0.2 + 0.2 ms.
  std::vector<Interval> running = {{0, 2'000'000}, {2'200'000, 4'800'000}, {5'000'000, 6'000'000}};
  std::vector<Interval> gaps = {{2'000'000, 5'000'000}};
  EXPECT_EQ(SwitchedNs(running, gaps, {0, 10'000'000}), 400'000);
  EXPECT_EQ(SwitchedNs(running, gaps, {0, 2'100'000}), 100'000) << "clipped to the window";
  EXPECT_EQ(SwitchedNs(running, {}, {0, 10'000'000}), 0) << "idle without a switched-out kernel";
}

TEST(WithinBesideTest, Table) {
  struct Case {
    double share, expect, neighbour, switched;
    bool want;
  } cases[] = {
      {29.0, 30, 57.5, 13, true},   // the H200's hard 30 of a hard 30/70 pair
      {57.5, 70, 29.0, 13, true},   // its 70: the device left 58
      {50.0, 70, 29.0, 13, false},  // less than what was left
      {73.5, 70, 20.0, 0, false},   // a ceiling whatever was left
      {26.9, 30, 20.0, 1, false},   // room for 30: within 3 of it
      {45.8, 30, 46.2, 8, false},   // an elastic 30 beside an unlimited neighbour, unheld
  };
  for (const Case& c : cases) {
    EXPECT_EQ(WithinBeside(c.share, c.expect, 3, c.neighbour, c.switched), c.want)
        << c.share << " vs " << c.expect << " beside " << c.neighbour << " + " << c.switched;
  }
}

}  // namespace
}  // namespace tessera::gpu_check
