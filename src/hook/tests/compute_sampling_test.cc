// Which launch the compute limiter times (src/hook/compute_sampling.h): the draws and the choice.
#include <cstdint>
#include <set>

#include <gtest/gtest.h>

extern "C" {
#include "hook/compute_sampling.h"
}

namespace {

constexpr uint64_t kUs = 1000;

struct Choice {
  const char* what;
  uint64_t interval_ns;
  unsigned skips;
  uint64_t since_ns;
  unsigned passed;
  uint32_t spans;
  bool take;
};

class SampleTake : public ::testing::TestWithParam<Choice> {};

TEST_P(SampleTake, FollowsTheTable) {
  const Choice& c = GetParam();
  sample_draw draw{c.interval_ns, c.skips};
  EXPECT_EQ(sample_take(&draw, c.since_ns, c.passed, c.spans) != 0, c.take) << c.what;
}

INSTANTIATE_TEST_SUITE_P(
    Table, SampleTake,
    ::testing::Values(
        Choice{"not due yet", 800 * kUs, 0, 799 * kUs, 0, 100, false},
        Choice{"due, nothing to let pass", 800 * kUs, 0, 800 * kUs, 0, 100, true},
        Choice{"due, two to let pass, none passed", 800 * kUs, 2, 900 * kUs, 0, 100, false},
        Choice{"due, two to let pass, one passed", 800 * kUs, 2, 900 * kUs, 1, 100, false},
        Choice{"due, two to let pass, two passed", 800 * kUs, 2, 900 * kUs, 2, 100, true},
        Choice{"a young key is timed at its first due launch", 800 * kUs, 7, 900 * kUs, 0, 3, true},
        Choice{"a young key is not timed before the sample is due", 800 * kUs, 0, 100 * kUs, 0, 0,
               false},
        Choice{"a key with SAMPLE_YOUNG spans waits its turn", 800 * kUs, 7, 900 * kUs, 0,
               SAMPLE_YOUNG, false},
        Choice{"overdue: taken whatever was drawn", 800 * kUs, 7, SAMPLE_OVERDUE_NS, 0, 100, true}),
    [](const ::testing::TestParamInfo<Choice>& info) {
      return "Case" + std::to_string(info.index);
    });

// The draws cover their ranges, average near their middles, and differ from seed to seed (a
// sample's seed is its start time and a counter: two processes or two samples never share one).
TEST(SampleDraw, SpreadsOverItsRanges) {
  uint64_t least = UINT64_MAX, most = 0, sum = 0;
  std::set<unsigned> skips;
  std::set<uint64_t> intervals;
  const int n = 10000;
  for (int i = 0; i < n; ++i) {
    sample_draw d = sample_draw_next(1'000'000'000ull + static_cast<uint64_t>(i) * 1'000'000);
    least = std::min(least, d.interval_ns);
    most = std::max(most, d.interval_ns);
    sum += d.interval_ns;
    skips.insert(d.skips);
    intervals.insert(d.interval_ns);
    ASSERT_LT(d.skips, static_cast<unsigned>(SAMPLE_SKIPS_MAX));
  }
  EXPECT_GE(least, SAMPLE_INTERVAL_NS / 2);
  EXPECT_LT(most, SAMPLE_INTERVAL_NS * 3 / 2);
  EXPECT_LT(least, SAMPLE_INTERVAL_NS / 2 + SAMPLE_INTERVAL_NS / 50) << "the low end is reached";
  EXPECT_GT(most, SAMPLE_INTERVAL_NS * 3 / 2 - SAMPLE_INTERVAL_NS / 50) << "the high end too";
  EXPECT_NEAR(static_cast<double>(sum) / n, SAMPLE_INTERVAL_NS, SAMPLE_INTERVAL_NS * 0.02);
  EXPECT_EQ(skips.size(), static_cast<size_t>(SAMPLE_SKIPS_MAX)) << "every skip count is drawn";
  EXPECT_GT(intervals.size(), static_cast<size_t>(n * 9 / 10)) << "seeds a ms apart differ";
}

}  // namespace
