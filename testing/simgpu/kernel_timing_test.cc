#include "kernel_timing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace simgpu {
namespace {

uint64_t Duration(const char* name, uint64_t blocks, uint32_t sms, uint64_t units = 0) {
  return KernelDurationNs(KernelTimingOf(name), blocks, sms, units);
}

TEST(SimgpuKernelTiming, BusyKernelsTakeTheirTimeWhateverTheirShape) {
  EXPECT_EQ(Duration("busy_20us", 1, 108), 20'000u);
  EXPECT_EQ(Duration("busy_20us", 100'000, 108), 20'000u);
  EXPECT_EQ(Duration("busy_0us", 1, 108), 0u);
}

TEST(SimgpuKernelTiming, GridKernelsRunTheirBlocksInWavesOverTheSms) {
  EXPECT_EQ(Duration("grid_500ns", 1, 108), 500u);
  EXPECT_EQ(Duration("grid_500ns", 108, 108), 500u);   // one wave
  EXPECT_EQ(Duration("grid_500ns", 109, 108), 1000u);  // a second, partial wave
  EXPECT_EQ(Duration("grid_500ns", 1080, 108), 5000u);
  EXPECT_EQ(Duration("grid_500ns", 1080, 132), 4500u);  // a larger GPU runs it faster
}

TEST(SimgpuKernelTiming, OtherNamesTakeTheDefault) {
  EXPECT_EQ(Duration("gemm", 1, 108), kDefaultKernelNs);
  EXPECT_EQ(Duration("busy_us", 1, 108), kDefaultKernelNs);
  EXPECT_EQ(Duration("grid_12us", 1, 108), kDefaultKernelNs);
  EXPECT_EQ(Duration("grid_x1ns", 1, 108), kDefaultKernelNs);
}

TEST(SimgpuKernelTiming, TouchKernelsTakeNPerMibAndMoreOnHostMemory) {
  KernelTiming t = KernelTimingOf("touch_1000ns");
  EXPECT_TRUE(t.touches_memory);
  EXPECT_EQ(t.per_mib_ns, 1000u);
  EXPECT_FALSE(t.takes_units);
  EXPECT_FALSE(KernelTimingOf("touch_1000us").touches_memory);  // nanoseconds only
  EXPECT_FALSE(KernelTimingOf("touch_ns").touches_memory);
  constexpr uint64_t kMiB = 1 << 20;
  EXPECT_EQ(TouchDurationNs(1000, 64 * kMiB, 0, 75), 64'000u);
  EXPECT_EQ(TouchDurationNs(1000, 0, 64 * kMiB, 75), 64'000u * 75);
  EXPECT_EQ(TouchDurationNs(1000, 32 * kMiB, 32 * kMiB, 75), 32'000u + 32'000u * 75);
  EXPECT_EQ(TouchDurationNs(1000, kMiB / 2, 0, 75), 500u);  // part of a MiB
  EXPECT_EQ(TouchDurationNs(1000, 0, 0, 75), 0u);
  EXPECT_EQ(TouchDurationNs(3'600'000'000, UINT64_MAX, UINT64_MAX, 10000), kMaxKernelNs);
}

TEST(SimgpuKernelTiming, WorkKernelsTakeNPerUnitWhateverTheGrid) {
  struct Case {
    const char* name;
    uint64_t blocks;
    uint32_t sms;
    uint64_t units;
    uint64_t want;
  };
  const Case cases[] = {
      {"work_1000ns", 1, 108, 500, 500'000},
      {"work_1000ns", 132, 132, 500, 500'000},  // one block per SM, as persistent kernels
      {"work_1000ns", 100'000, 108, 500, 500'000},
      {"work_1000ns", 132, 132, 2000, 2'000'000},  // a larger problem, the same grid
      {"work_1000ns", 132, 132, 0, 0},
      {"work_1ns", 1, 108, 7, 7},
      {"work_0ns", 1, 108, 1'000'000, 0},
      {"work_1000ns", 1, 108, UINT64_MAX, kMaxKernelNs},  // clamped to an hour
      {"work_3600000000ns", 1, 108, 1000, kMaxKernelNs},  // exactly an hour
      {"work_3600000000ns", 1, 108, 1001, kMaxKernelNs},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Duration(c.name, c.blocks, c.sms, c.units), c.want)
        << c.name << " blocks=" << c.blocks << " units=" << c.units;
  }
}

TEST(SimgpuKernelTiming, WorkNamesParse) {
  struct Case {
    const char* name;
    bool takes_units;
    uint64_t per_unit_ns;
    uint64_t ns_at_99_units;  // what a launch with 99 units takes
  };
  const Case cases[] = {
      {"work_1000ns", true, 1000, 99'000},
      {"work_0ns", true, 0, 0},
      {"work_3600000000ns", true, 3'600'000'000, 99 * 3'600'000'000ull},
      {"work_3600000001ns", false, 0, kDefaultKernelNs},  // over an hour: an ordinary name
      {"work_ns", false, 0, kDefaultKernelNs},
      {"work_12us", false, 0, kDefaultKernelNs},
      {"work_x1ns", false, 0, kDefaultKernelNs},
      {"work_-1ns", false, 0, kDefaultKernelNs},
      {"Work_1ns", false, 0, kDefaultKernelNs},
      {"busy_1us", false, 0, 1000},
      {"grid_7ns", false, 0, 7},
  };
  for (const Case& c : cases) {
    KernelTiming t = KernelTimingOf(c.name);
    EXPECT_EQ(t.takes_units, c.takes_units) << c.name;
    EXPECT_EQ(t.per_unit_ns, c.per_unit_ns) << c.name;
    EXPECT_EQ(Duration(c.name, 1, 108, 99), c.ns_at_99_units) << c.name;
  }
}

constexpr uint64_t kLaunches = 100'000;
constexpr uint64_t kPeriodNs = 20'000'000'000;

TEST(SimgpuKernelTiming, IdealIsExactlyNominal) {
  const Variation ideal{0, 0, kPeriodNs, DeviceSeed("GPU-ideal")};
  const Variation no_period{0, 10, 0, 1};  // drift without a period: off
  const uint64_t nominals[] = {0, 1, 999, 10'000, 500'000, kMaxKernelNs};
  const uint64_t nows[] = {0, 1, 123'456'789, 5'000'000'000, 987'654'321'012'345};
  for (uint64_t nominal : nominals) {
    for (uint64_t now : nows) {
      for (uint64_t seq = 1; seq < 600; ++seq) {
        ASSERT_EQ(VariedDurationNs(nominal, ideal, seq, now), nominal);
        ASSERT_EQ(VariedDurationNs(nominal, no_period, seq, now), nominal);
      }
    }
  }
}

TEST(SimgpuKernelTiming, ZeroStaysZeroAndNothingElseReachesZero) {
  const Variation wild{50, 50, kPeriodNs, 42};
  for (uint64_t seq = 1; seq < 10'000; ++seq) {
    uint64_t now = seq * 7'919'000'000;
    ASSERT_EQ(VariedDurationNs(0, wild, seq, now), 0u);
    ASSERT_GE(VariedDurationNs(1, wild, seq, now), 1u);
  }
}

TEST(SimgpuKernelTiming, JitterIsUniformAroundNominalWithRareOutliers) {
  struct Case {
    uint32_t jitter_percent;
    uint64_t seed;
  };
  const Case cases[] = {{1, DeviceSeed("GPU-00000000-0000-0000-0000-000000000000")},
                        {5, DeviceSeed("GPU-0a1b2c3d-0000-0000-0000-000000000001")},
                        {5, 0},
                        {20, 12345},
                        {49, UINT64_MAX}};
  for (const Case& c : cases) {
    const double low = 1.0 - c.jitter_percent / 100.0, high = 1.0 + c.jitter_percent / 100.0;
    double sum = 0, sum_regular = 0, min_regular = 2, max_regular = 0;
    uint64_t outliers = 0;
    for (uint64_t seq = 1; seq <= kLaunches; ++seq) {
      double f = JitterFactor(c.seed, seq, c.jitter_percent);
      ASSERT_EQ(f, JitterFactor(c.seed, seq, c.jitter_percent));  // deterministic
      sum += f;
      if (f > high) {
        ++outliers;
        ASSERT_GE(f, kOutlierMin);
        ASSERT_LE(f, kOutlierMax);
      } else {
        ASSERT_GE(f, low);
        sum_regular += f;
        min_regular = std::min(min_regular, f);
        max_regular = std::max(max_regular, f);
      }
    }
    SCOPED_TRACE("jitter=" + std::to_string(c.jitter_percent) + " seed=" + std::to_string(c.seed));
    // The mean, outliers included, within 1% of nominal (they add 1.25/256, about 0.5%).
    EXPECT_NEAR(sum / kLaunches, 1.0, 0.01);
    EXPECT_NEAR(sum / kLaunches, 1.0 + 1.25 / kOutlierOneIn, 0.002);
    // The regular launches: uniform over the whole band, centred on nominal.
    EXPECT_NEAR(sum_regular / (kLaunches - outliers), 1.0, c.jitter_percent / 100.0 * 0.02);
    EXPECT_LT(min_regular, low + (high - low) * 0.001);
    EXPECT_GT(max_regular, high - (high - low) * 0.001);
    // One launch in 256: 390.6 expected, 3 standard deviations either side.
    EXPECT_GT(outliers, 331u);
    EXPECT_LT(outliers, 450u);
  }
}

TEST(SimgpuKernelTiming, NoJitterNoOutliers) {
  for (uint64_t seq = 1; seq <= kLaunches; ++seq) ASSERT_EQ(JitterFactor(7, seq, 0), 1.0);
}

TEST(SimgpuKernelTiming, DevicesJitterApart) {
  uint64_t a = DeviceSeed("GPU-aaaaaaaa"), b = DeviceSeed("GPU-aaaaaaab");
  ASSERT_NE(a, b);
  int same = 0;
  for (uint64_t seq = 1; seq <= 1000; ++seq)
    same += JitterFactor(a, seq, 5) == JitterFactor(b, seq, 5);
  EXPECT_LT(same, 5);
}

TEST(SimgpuKernelTiming, DriftIsASineOfThePeriodWithinItsBounds) {
  struct Case {
    uint32_t drift_percent;
    uint64_t period_ns;
    uint64_t seed;
  };
  const Case cases[] = {{10, kPeriodNs, DeviceSeed("GPU-1")},
                        {10, kPeriodNs, DeviceSeed("GPU-2")},
                        {1, 1'000'000'000, 0},
                        {50, 3'600'000'000'000, 99}};
  for (const Case& c : cases) {
    SCOPED_TRACE("drift=" + std::to_string(c.drift_percent) + " seed=" + std::to_string(c.seed));
    const Variation v{0, c.drift_percent, c.period_ns, c.seed};
    const double amplitude = c.drift_percent / 100.0;
    const uint64_t start = 1'234'567'890'123'456;  // a CLOCK_MONOTONIC reading of a long uptime
    const uint64_t samples = 10'000;
    double sum = 0, lo = 2, hi = 0;
    for (uint64_t i = 0; i < samples; ++i) {
      uint64_t now = start + i * (c.period_ns / samples);
      double f = DriftFactor(v, now);
      ASSERT_GE(f, 1.0 - amplitude - 1e-12);
      ASSERT_LE(f, 1.0 + amplitude + 1e-12);
      ASSERT_NEAR(f, DriftFactor(v, now + c.period_ns), 1e-9);  // periodic
      sum += f;
      lo = std::min(lo, f);
      hi = std::max(hi, f);
    }
    EXPECT_NEAR(sum / samples, 1.0, 1e-6);  // nominal on average over a period
    EXPECT_NEAR(hi, 1.0 + amplitude, amplitude * 1e-3);
    EXPECT_NEAR(lo, 1.0 - amplitude, amplitude * 1e-3);
    // Slow: over a millisecond the speed changes by at most 2 pi D/100 * 1ms / period.
    double step = std::abs(DriftFactor(v, start + 1'000'000) - DriftFactor(v, start));
    EXPECT_LE(step, 2 * std::numbers::pi * amplitude * 1e6 / c.period_ns + 1e-12);
  }
}

TEST(SimgpuKernelTiming, VariedDurationIsNominalTimesJitterTimesDrift) {
  const Variation v{5, 10, kPeriodNs, DeviceSeed("GPU-x")};
  const Variation drift_only{0, 10, kPeriodNs, v.seed};
  for (uint64_t seq = 1; seq <= 1000; ++seq) {
    uint64_t now = 1'000'000'000 + seq * 13'000'000;
    double want = std::round(500'000.0 * JitterFactor(v.seed, seq, 5) * DriftFactor(v, now));
    ASSERT_EQ(VariedDurationNs(500'000, v, seq, now), static_cast<uint64_t>(want));
    ASSERT_EQ(VariedDurationNs(500'000, drift_only, seq, now),
              static_cast<uint64_t>(std::round(500'000.0 * DriftFactor(v, now))));
  }
}

TEST(SimgpuKernelTiming, DefaultsKeepTheMeanWithinAPercentOverAPeriod) {
  // The defaults (jitter 5, drift 10 over 20 s), launches spread evenly over one drift period.
  const Variation v{5, 10, kPeriodNs, DeviceSeed("GPU-defaults")};
  double sum = 0;
  for (uint64_t seq = 1; seq <= kLaunches; ++seq) {
    sum += static_cast<double>(VariedDurationNs(10'000, v, seq, seq * (kPeriodNs / kLaunches)));
  }
  EXPECT_NEAR(sum / kLaunches / 10'000, 1.0, 0.01);
}

}  // namespace
}  // namespace simgpu
