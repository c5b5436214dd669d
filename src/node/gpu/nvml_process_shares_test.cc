// The share arithmetic over NVML-like samples, without NVML: stamps aligned or on each process's
// own phase, idle periods, limited history, a 1 s period, rounding and the container's sum.
#include "node/gpu/nvml_process_shares.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace tessera::node {
namespace {

constexpr uint64_t kNow = 1'000'000'000'000;  // us
constexpr uint64_t kSixth = 166'667;          // 1/6 s, us
constexpr uint64_t kSecond = 1'000'000;

// `count` samples of `pid`, the newest ending `age` before kNow, one per `period`, oldest first;
// `utils` repeats when shorter than `count`.
std::vector<ProcessSample> Series(uint32_t pid, uint64_t age, uint64_t period, int count,
                                  std::vector<unsigned> utils) {
  std::vector<ProcessSample> out;
  for (int k = count - 1; k >= 0; --k) {
    out.push_back({pid, kNow - age - static_cast<uint64_t>(k) * period,
                   utils[static_cast<size_t>(count - 1 - k) % utils.size()]});
  }
  return out;
}

std::vector<ProcessSample> Join(std::vector<std::vector<ProcessSample>> parts) {
  std::vector<ProcessSample> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// `samples` with 0, 0.7 or 1.4 ms added to their stamps in turn.
std::vector<ProcessSample> Jittered(std::vector<ProcessSample> samples) {
  for (size_t k = 0; k < samples.size(); ++k) samples[k].stamp_us += (k % 3) * 700;
  return samples;
}

struct ShareCase {
  std::string name;
  std::vector<ProcessSample> samples;
  // Containers (their PIDs) and the share the metric shows for each.
  std::vector<std::pair<std::vector<uint32_t>, unsigned>> want;
};

TEST(ProcessSharesOf, Table) {
  const std::vector<ShareCase> cases = {
      {"aligned stamps (simgpu nvml=aligned)",
       Join({Series(1, 10'000, kSixth, 30, {60}), Series(2, 10'000, kSixth, 30, {40})}),
       {{{1}, 60}, {{2}, 40}, {{1, 2}, 100}}},
      // Grouping by equal stamps read each of these as 25: twice as many "periods".
      {"own phases",
       Join({Series(1, 10'000, kSixth, 30, {50}), Series(2, 90'000, kSixth, 30, {50})}),
       {{{1}, 50}, {{2}, 50}}},
      {"own phases, stamps jittered by up to 1.4 ms",
       Jittered(Join({Series(1, 10'000, kSixth, 30, {50}), Series(2, 90'000, kSixth, 30, {50})})),
       {{{1}, 50}, {{2}, 50}}},
      {"own phases, history of 16 periods (2.7 s) is not divided by 5 s",
       Join({Series(1, 20'000, kSixth, 16, {70}), Series(2, 150'000, kSixth, 16, {30})}),
       {{{1}, 70}, {{2}, 30}}},
      {"a process idle for the first part of the window",
       Join({Series(1, 10'000, kSixth, 30, {50}), Series(2, 70'000, kSixth, 12, {50})}),
       {{{1}, 50}, {{2}, 20}}},
      {"a process idle in the middle of the window",
       Join({Series(1, 10'000, kSixth, 10, {90}),
             Series(1, 10'000 + 20 * kSixth, kSixth, 10, {90})}),
       {{{1}, 60}}},
      {"a process that stopped half way through the window",
       Series(1, 30'000 + 15 * kSixth, kSixth, 15, {80}),
       {{{1}, 40}}},
      {"a sample a little late is not idle time",
       Series(1, kSixth + kSixth / 20, kSixth, 16, {100}),
       {{{1}, 100}}},
      {"a 1 s period",
       Join({Series(1, 300'000, kSecond, 5, {80}), Series(2, 700'000, kSecond, 5, {20})}),
       {{{1}, 80}, {{2}, 20}}},
      {"a 1 s period, busy in every other period",
       Join({Series(1, 300'000, kSecond, 5, {80}), Series(2, 700'000, 2 * kSecond, 2, {20})}),
       {{{1}, 80}, {{2}, 8}}},
      // One sample per process: the newest of each, as a driver that samples one process per
      // instant returns them, each its process's share of the second before its stamp.
      {"one sample only, just taken", {{1, kNow - 50'000, 40}}, {{{1}, 40}}},
      {"one sample only, 0.95 s ago", {{1, kNow - 950'000, 42}}, {{{1}, 42}}},
      {"one process per instant: each process's newest second",
       {{1, kNow - 150'000, 31}, {2, kNow - 350'000, 58}, {3, kNow - 2'500'000, 90}},
       {{{1}, 31}, {{2}, 58}, {{1, 2}, 89}, {{3}, 0}}},
      // 33.2 and 12.4 + 12.4: the container's sum is rounded once (per PID: 12 + 12 = 24).
      {"whole-percent rounding",
       Join({Series(1, 10'000, kSixth, 5, {33, 33, 34, 33, 33}),
             Series(2, 20'000, kSixth, 5, {12, 12, 12, 13, 13}),
             Series(3, 30'000, kSixth, 5, {12, 12, 12, 13, 13})}),
       {{{1}, 33}, {{2}, 12}, {{2, 3}, 25}}},
      {"a sum over a container capped at 100",
       Join({Series(1, 10'000, kSixth, 30, {60}), Series(2, 60'000, kSixth, 30, {70})}),
       {{{1, 2}, 100}, {{1, 2, 3}, 100}, {{3}, 0}}},
      {"smUtil above 100 counts as 100", Series(1, 10'000, kSixth, 6, {250}), {{{1}, 100}}},
      {"samples outside the window or after now are not used",
       {{1, kNow - 5'000'000, 100}, {1, kNow + 1, 100}, {1, kNow - 10'000, 30}},
       {{{1}, 30}}},
      {"no samples", {}, {{{1}, 0}}},
  };
  for (const ShareCase& c : cases) {
    SCOPED_TRACE(c.name);
    ProcessShares shares = {{"GPU-0", ProcessSharesOf(c.samples, kNow)}};
    for (const auto& [pids, want] : c.want) {
      EXPECT_EQ(ContainerShare(shares, "GPU-0", pids), want)
          << "pids " << ::testing::PrintToString(pids);
    }
  }
}

TEST(ProcessSharesOf, SharesOfOneGpuAddUpToItsBusyTime) {
  // Three processes on their own phases taking turns: 30 + 20 + 50 = the whole GPU.
  auto samples = Join({Series(1, 5'000, kSixth, 30, {30}), Series(2, 61'000, kSixth, 30, {20}),
                       Series(3, 123'000, kSixth, 30, {50})});
  auto shares = ProcessSharesOf(samples, kNow);
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_NEAR(shares[1] + shares[2] + shares[3], 100.0, 0.01);
}

struct PeriodCase {
  std::string name;
  std::vector<ProcessSample> samples;
  uint64_t want;
  uint64_t tolerance = 0;
};

TEST(InferSamplePeriodUs, Table) {
  const std::vector<PeriodCase> cases = {
      {"1/6 s", Series(1, 10'000, kSixth, 30, {50}), kSixth},
      {"one process with adjacent periods tells the others'",
       Join({Series(1, 10'000, 3 * kSixth, 10, {50}), Series(2, 40'000, kSixth, 3, {50})}), kSixth},
      {"jittered stamps", Jittered(Series(1, 10'000, kSixth, 30, {50})), kSixth, 1'000},
      {"1 s", Series(1, 10'000, kSecond, 5, {50}), kSecond},
      {"a little over 1 s is 1 s", Series(1, 10'000, 1'030'000, 4, {50}), kSecond},
      {"gaps of 2 s: the largest whole fraction up to 1 s", Series(1, 10'000, 2 * kSecond, 3, {50}),
       kSecond},
      {"gaps of 1.5 s", Series(1, 10'000, 1'500'000, 3, {50}), 750'000},
      {"below 1/6 s is 1/6 s", Series(1, 10'000, 50'000, 10, {50}), kSixth},
      {"no gap: 1/6 s", {{1, kNow - 10'000, 50}, {2, kNow - 20'000, 50}}, kSixth},
      {"a stamp given twice is no gap", {{1, kNow - 10'000, 50}, {1, kNow - 10'000, 60}}, kSixth},
  };
  for (const PeriodCase& c : cases) {
    SCOPED_TRACE(c.name);
    uint64_t got = InferSamplePeriodUs(c.samples);
    EXPECT_LE(got, c.want + c.tolerance);
    EXPECT_GE(got + c.tolerance, c.want);
  }
}

}  // namespace
}  // namespace tessera::node
