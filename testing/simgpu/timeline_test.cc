#include "timeline.h"

#include <gtest/gtest.h>

#include <memory>

namespace simgpu {
namespace {

constexpr uint64_t kMs = 1'000'000;

class SimgpuTimelineUnit : public ::testing::Test {
 protected:
  SimgpuTimelineUnit() : dev_(std::make_unique<DeviceState>()) {}
  DeviceState& dev() { return *dev_; }

  std::unique_ptr<DeviceState> dev_;
};

TEST_F(SimgpuTimelineUnit, KernelsRunOneAtATimeInLaunchOrder) {
  uint64_t s = 0, e = 0;
  ASSERT_TRUE(Enqueue(dev(), 0, 0, 2 * kMs, 1000 * kMs, &s, &e));
  EXPECT_EQ(s, 1000 * kMs);
  EXPECT_EQ(e, 1002 * kMs);
  ASSERT_TRUE(Enqueue(dev(), 1, 0, 3 * kMs, 1001 * kMs, &s, &e));
  EXPECT_EQ(s, 1002 * kMs);  // waits for the running kernel
  EXPECT_EQ(e, 1005 * kMs);
  ASSERT_TRUE(Enqueue(dev(), 1, 1010 * kMs, 1 * kMs, 1001 * kMs, &s, &e));
  EXPECT_EQ(s, 1010 * kMs);  // not before its stream's event
}

TEST_F(SimgpuTimelineUnit, OnlyElapsedTimeCounts) {
  uint64_t s = 0, e = 0;
  int a = PidStatIndex(dev(), 100);
  int b = PidStatIndex(dev(), 200);
  ASSERT_TRUE(Enqueue(dev(), a, 0, 10 * kMs, 1000 * kMs, &s, &e));
  ASSERT_TRUE(Enqueue(dev(), b, 0, 10 * kMs, 1000 * kMs, &s, &e));
  uint64_t now = 1004 * kMs;
  Settle(dev(), now);
  EXPECT_EQ(BusyNs(dev(), now), 4 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), a, now), 4 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), b, now), 0u);
  now = 1015 * kMs;
  Settle(dev(), now);
  EXPECT_EQ(BusyNs(dev(), now), 15 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), a, now), 10 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), b, now), 5 * kMs);
  now = 1100 * kMs;
  Settle(dev(), now);
  EXPECT_EQ(BusyNs(dev(), now), 20 * kMs);
  EXPECT_EQ(dev().segment_count, 0u);
  EXPECT_EQ(BusyInWindow(dev(), now, 1000 * kMs), 20 * kMs);
  EXPECT_EQ(PidBusyInWindow(dev(), b, now, 1000 * kMs), 10 * kMs);
  now = 3000 * kMs;  // long after: outside the last second
  Settle(dev(), now);
  EXPECT_EQ(BusyInWindow(dev(), now, 1000 * kMs), 0u);
  EXPECT_EQ(BusyNs(dev(), now), 20 * kMs);
}

TEST_F(SimgpuTimelineUnit, BackToBackKernelsOfOnePidShareOneSegment) {
  uint64_t s = 0, e = 0;
  for (int i = 0; i < 10 * kSegmentCapacity; ++i) {
    ASSERT_TRUE(Enqueue(dev(), 0, 0, 10'000, 1000 * kMs, &s, &e));
  }
  EXPECT_EQ(dev().segment_count, 1u);
}

TEST_F(SimgpuTimelineUnit, FullRingRefusesAndReportsWhenItFrees) {
  uint64_t s = 0, e = 0;
  for (int i = 0; i < kSegmentCapacity; ++i) {
    ASSERT_TRUE(Enqueue(dev(), i % 2, 0, kMs, 1000 * kMs, &s, &e));
  }
  EXPECT_FALSE(Enqueue(dev(), 0, 0, kMs, 1000 * kMs, &s, &e));
  EXPECT_EQ(OldestSegmentEnd(dev(), 1000 * kMs), 1001 * kMs);
  Settle(dev(), 1001 * kMs);
  EXPECT_TRUE(Enqueue(dev(), 0, 0, kMs, 1001 * kMs, &s, &e));
}

TEST_F(SimgpuTimelineUnit, PidTableReusesDeadPidsWhenFull) {
  // PIDs above the kernel's pid_max never exist, so they all count as dead.
  for (int i = 0; i < kMaxPidStats; ++i) ASSERT_EQ(PidStatIndex(dev(), 5'000'000 + i), i);
  EXPECT_EQ(PidStatIndex(dev(), 5'000'000), 0);
  int reused = PidStatIndex(dev(), 9'000'000);
  ASSERT_GE(reused, 0);
  EXPECT_EQ(dev().pids[reused].pid, 9'000'000);
  EXPECT_EQ(dev().pids[reused].busy_ns, 0u);
}

}  // namespace
}  // namespace simgpu
