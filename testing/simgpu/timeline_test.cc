#include "timeline.h"

#include <gtest/gtest.h>

#include <memory>

#include "device_spec.h"

namespace simgpu {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 1000 * kMs;

class SimgpuTimelineUnit : public ::testing::Test {
 protected:
  SimgpuTimelineUnit() : dev_(std::make_unique<DeviceState>()) {}
  DeviceState& dev() { return *dev_; }

  void Init(SchedMode mode) { InitTimeline(dev(), mode, 2 * kMs); }

  // Advances to `now` and queues a kernel of `ctx` (PID table entry ctx - 1) there.
  uint64_t Launch(uint32_t ctx, uint64_t duration, uint64_t now, KernelRef after = {}) {
    Advance(dev(), 0, now);
    return Enqueue(dev(), ctx, static_cast<int>(ctx) - 1, after, duration, now);
  }

  // Queues a kernel of `ctx` on stream lane `lane` at `now`.
  uint64_t LaunchOn(uint32_t ctx, uint32_t lane, uint64_t duration, uint64_t now) {
    Advance(dev(), 0, now);
    return Enqueue(dev(), ctx, static_cast<int>(ctx) - 1, {}, duration, now, lane);
  }

  // When kernel `seq` ends: advances far enough to see it.
  uint64_t EndOf(uint64_t seq) {
    Advance(dev(), 0, dev().sched_now_ns + 100'000 * kMs);
    uint64_t end = 0;
    EXPECT_TRUE(KernelEnded(dev(), seq, &end));
    return end;
  }

  std::unique_ptr<DeviceState> dev_;
};

TEST_F(SimgpuTimelineUnit, FifoRunsKernelsOneAtATimeInLaunchOrder) {
  Init(SchedMode::kFifo);
  uint64_t a = Launch(1, 2 * kMs, kT0);
  uint64_t b = Launch(2, 3 * kMs, kT0 + kMs);
  uint64_t c = Launch(1, 1 * kMs, kT0 + kMs);
  EXPECT_EQ(EarliestEnd(dev(), b), kT0 + 5 * kMs);  // exact in FIFO mode
  EXPECT_EQ(EndOf(a), kT0 + 2 * kMs);
  EXPECT_EQ(EndOf(b), kT0 + 5 * kMs);  // waits for the running kernel
  EXPECT_EQ(EndOf(c), kT0 + 6 * kMs);  // and its context's turn never comes earlier
}

TEST_F(SimgpuTimelineUnit, AKernelWaitsForTheKernelOfAnotherDevice) {
  Init(SchedMode::kFifo);
  uint64_t other_end = UINT64_MAX;
  EndOnOtherDevice other = [&](int, uint64_t) { return other_end; };
  Advance(dev(), 0, kT0, other);
  uint64_t a = Enqueue(dev(), 1, 0, KernelRef{3, 7}, kMs, kT0);
  uint64_t b = Enqueue(dev(), 2, 1, KernelRef{}, kMs, kT0);
  Advance(dev(), 0, kT0 + 5 * kMs, other);
  EXPECT_EQ(BusyNs(dev()), 0u);  // FIFO: the waiting kernel holds up the device
  other_end = kT0 + 10 * kMs;
  Advance(dev(), 0, kT0 + 20 * kMs, other);
  uint64_t end = 0;
  ASSERT_TRUE(KernelEnded(dev(), a, &end));
  EXPECT_EQ(end, kT0 + 11 * kMs);
  ASSERT_TRUE(KernelEnded(dev(), b, &end));
  EXPECT_EQ(end, kT0 + 12 * kMs);
}

TEST_F(SimgpuTimelineUnit, OnlyElapsedTimeCounts) {
  Init(SchedMode::kFifo);
  int a = PidStatIndex(dev(), 100);
  int b = PidStatIndex(dev(), 200);
  Advance(dev(), 0, kT0);
  ASSERT_NE(Enqueue(dev(), 1, a, {}, 10 * kMs, kT0), 0u);
  ASSERT_NE(Enqueue(dev(), 2, b, {}, 10 * kMs, kT0), 0u);
  uint64_t now = kT0 + 4 * kMs;
  Advance(dev(), 0, now);
  EXPECT_EQ(BusyNs(dev()), 4 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), a), 4 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), b), 0u);
  now = kT0 + 15 * kMs;
  Advance(dev(), 0, now);
  EXPECT_EQ(BusyNs(dev()), 15 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), a), 10 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), b), 5 * kMs);
  now = kT0 + 100 * kMs;
  Advance(dev(), 0, now);
  EXPECT_EQ(BusyNs(dev()), 20 * kMs);
  EXPECT_EQ(dev().segment_count, 0u);
  EXPECT_EQ(BusyInWindow(dev(), now, 1000 * kMs), 20 * kMs);
  EXPECT_EQ(PidBusyInWindow(dev(), b, now, 1000 * kMs), 10 * kMs);
  now = kT0 + 2000 * kMs;  // long after: outside the last second
  Advance(dev(), 0, now);
  EXPECT_EQ(BusyInWindow(dev(), now, 1000 * kMs), 0u);
  EXPECT_EQ(BusyNs(dev()), 20 * kMs);
}

TEST_F(SimgpuTimelineUnit, FullRingRefusesAndReportsWhenItFrees) {
  Init(SchedMode::kFifo);
  Advance(dev(), 0, kT0);
  for (int i = 0; i < kSegmentCapacity; ++i) {
    ASSERT_NE(Enqueue(dev(), 1 + i % 2, -1, {}, kMs, kT0), 0u);
  }
  EXPECT_EQ(Enqueue(dev(), 1, -1, {}, kMs, kT0), 0u);
  EXPECT_EQ(EarliestRoom(dev(), kT0), kT0 + kMs);
  Advance(dev(), 0, kT0 + kMs);
  EXPECT_NE(Enqueue(dev(), 1, -1, {}, kMs, kT0 + kMs), 0u);
}

TEST_F(SimgpuTimelineUnit, TwoContextsWithDeepQueuesGetHalfTheDeviceEach) {
  Init(SchedMode::kTimeSlice);
  for (int i = 0; i < 300; ++i) {
    Launch(1, 5 * kMs, kT0);
    Launch(2, 5 * kMs, kT0);
  }
  Advance(dev(), 0, kT0 + 1000 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), 0), 500 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), 1), 500 * kMs);
  EXPECT_EQ(BusyNs(dev()), 1000 * kMs);
}

TEST_F(SimgpuTimelineUnit, ContextsTakeTurnsInContextOrder) {
  Init(SchedMode::kTimeSlice);
  for (int i = 0; i < 100; ++i) {
    for (uint32_t ctx : {3u, 1u, 2u}) Launch(ctx, 5 * kMs, kT0);
  }
  Advance(dev(), 0, kT0 + 3 * kMs);  // context 1's slice, then context 2's
  EXPECT_EQ(PidBusyNs(dev(), 0), 2 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), 1), 1 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), 2), 0u);
  Advance(dev(), 0, kT0 + 600 * kMs);
  for (int p = 0; p < 3; ++p) EXPECT_EQ(PidBusyNs(dev(), p), 200 * kMs);
}

TEST_F(SimgpuTimelineUnit, AKernelLongerThanASliceIsPreemptedAndResumes) {
  Init(SchedMode::kTimeSlice);
  uint64_t a = Launch(1, 5 * kMs, kT0);
  uint64_t b = Launch(2, 5 * kMs, kT0);
  Advance(dev(), 0, kT0 + kMs);
  EXPECT_EQ(EarliestEnd(dev(), a), kT0 + 9 * kMs);  // the round robin played forward
  EXPECT_EQ(EarliestEnd(dev(), b), kT0 + 10 * kMs);
  Advance(dev(), 0, kT0 + 3 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), 0), 2 * kMs);  // preempted at its slice's end
  EXPECT_EQ(PidBusyNs(dev(), 1), 1 * kMs);
  // a: [0, 2) [4, 6) [8, 9); b: [2, 4) [6, 8) [9, 10)
  EXPECT_EQ(EndOf(a), kT0 + 9 * kMs);
  EXPECT_EQ(EndOf(b), kT0 + 10 * kMs);
}

TEST_F(SimgpuTimelineUnit, AShortKernelBesideADeepQueueRunsAtTheNextSlice) {
  Init(SchedMode::kTimeSlice);
  for (int i = 0; i < 100; ++i) Launch(1, 5 * kMs, kT0);
  uint64_t shortk = Launch(2, kMs / 50, kT0 + 3 * kMs);
  // The holder keeps the device until its slice ends at 4 ms.
  EXPECT_EQ(EarliestEnd(dev(), shortk), kT0 + 4 * kMs + kMs / 50);
  EXPECT_EQ(EndOf(shortk), kT0 + 4 * kMs + kMs / 50);
}

TEST_F(SimgpuTimelineUnit, AWaiterCountsTheHoldersQueuedWorkNotItsWholeSlice) {
  Init(SchedMode::kTimeSlice);
  for (int i = 0; i < 4; ++i) Launch(1, kMs / 10, kT0);  // 0.4 ms: less than its slice
  uint64_t next = Launch(2, kMs, kT0 + kMs / 10);
  EXPECT_EQ(EarliestEnd(dev(), next), kT0 + kMs * 14 / 10);
  EXPECT_EQ(EndOf(next), kT0 + kMs * 14 / 10);
}

TEST_F(SimgpuTimelineUnit, FifoKeepsAShortKernelBehindTheWholeQueue) {
  Init(SchedMode::kFifo);
  for (int i = 0; i < 100; ++i) Launch(1, 5 * kMs, kT0);
  uint64_t shortk = Launch(2, kMs / 50, kT0 + 3 * kMs);
  EXPECT_EQ(EndOf(shortk), kT0 + 500 * kMs + kMs / 50);
}

TEST_F(SimgpuTimelineUnit, AContextWhoseWorkRunsOutGivesUpItsSlice) {
  Init(SchedMode::kTimeSlice);
  uint64_t a = Launch(1, kMs, kT0);
  uint64_t b = Launch(2, 3 * kMs, kT0);
  EXPECT_EQ(EndOf(a), kT0 + kMs);
  EXPECT_EQ(EndOf(b), kT0 + 4 * kMs);  // alone: slice after slice
  EXPECT_EQ(BusyNs(dev()), 4 * kMs);
}

TEST_F(SimgpuTimelineUnit, AKernelWaitingForAnotherContextsKernelLetsOthersRun) {
  Init(SchedMode::kTimeSlice);
  uint64_t a = Launch(1, 5 * kMs, kT0);
  uint64_t b = Launch(2, kMs, kT0, KernelRef{0, a});
  uint64_t c = Launch(2, kMs, kT0);  // behind b: a context's kernels run in launch order
  EXPECT_EQ(EndOf(a), kT0 + 5 * kMs);
  EXPECT_EQ(EndOf(b), kT0 + 6 * kMs);
  EXPECT_EQ(EndOf(c), kT0 + 7 * kMs);
}

TEST_F(SimgpuTimelineUnit, AnIdleDeviceStartsALaunchAtOnce) {
  Init(SchedMode::kTimeSlice);
  uint64_t a = Launch(1, kMs, kT0);
  Advance(dev(), 0, kT0 + 10 * kMs);
  uint64_t end = 0;
  ASSERT_TRUE(KernelEnded(dev(), a, &end));
  EXPECT_EQ(end, kT0 + kMs);
  uint64_t b = Launch(2, kMs, kT0 + 50 * kMs);
  uint64_t c = Launch(1, kMs, kT0 + 50 * kMs);
  EXPECT_EQ(EndOf(b), kT0 + 51 * kMs);
  EXPECT_EQ(EndOf(c), kT0 + 52 * kMs);
  EXPECT_EQ(BusyNs(dev()), 3 * kMs);
}

TEST_F(SimgpuTimelineUnit, EndsOfLongFinishedKernelsAreForgotten) {
  Init(SchedMode::kFifo);
  uint64_t first = Launch(1, 1000, kT0);
  for (int i = 0; i < kEndCapacity; ++i) {
    Launch(1, 1000, kT0 + static_cast<uint64_t>(i + 1) * kMs);
  }
  Advance(dev(), 0, kT0 + static_cast<uint64_t>(kEndCapacity + 2) * kMs);
  uint64_t end = 1;
  EXPECT_TRUE(KernelEnded(dev(), first, &end));
  EXPECT_EQ(end, 0u);
  EXPECT_TRUE(KernelEnded(dev(), first + 1, &end));
  EXPECT_EQ(end, kT0 + kMs + 1000);
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

TEST_F(SimgpuTimelineUnit, StreamsOfOneContextShareTheDevice) {
  Init(SchedMode::kTimeSlice);
  dev().streams_concurrent = 1;
  uint64_t a = LaunchOn(1, 1, 1 * kMs, kT0);
  uint64_t b = LaunchOn(1, 2, 1 * kMs, kT0);
  // Together, each at half the device: both end after 2 ms, and the PID was busy 2 ms, not 4.
  EXPECT_EQ(EndOf(a), kT0 + 2 * kMs);
  EXPECT_EQ(EndOf(b), kT0 + 2 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), 0), 2 * kMs);
}

TEST_F(SimgpuTimelineUnit, AStreamKeepsItsOrderAndTheLegacyLaneIsABarrier) {
  Init(SchedMode::kTimeSlice);
  dev().streams_concurrent = 1;
  uint64_t a1 = LaunchOn(1, 1, 1 * kMs, kT0);
  uint64_t a2 = LaunchOn(1, 1, 1 * kMs, kT0);
  uint64_t b = LaunchOn(1, 2, 2 * kMs, kT0);
  uint64_t legacy = LaunchOn(1, 0, 1 * kMs, kT0);
  uint64_t after = LaunchOn(1, 2, 1 * kMs, kT0);
  // a1 and b share until a1 ends (2 ms), then a2 and b, with 1 ms left each, until 4 ms.
  EXPECT_EQ(EndOf(a1), kT0 + 2 * kMs);
  EXPECT_EQ(EndOf(a2), kT0 + 4 * kMs);
  EXPECT_EQ(EndOf(b), kT0 + 4 * kMs);
  EXPECT_EQ(EndOf(legacy), kT0 + 5 * kMs);  // after all of them, alone
  EXPECT_EQ(EndOf(after), kT0 + 6 * kMs);   // after the barrier
}

TEST_F(SimgpuTimelineUnit, SerialStreamsRunInLaunchOrder) {
  Init(SchedMode::kTimeSlice);  // streams_concurrent 0: the idealised device
  uint64_t a = LaunchOn(1, 1, 1 * kMs, kT0);
  uint64_t b = LaunchOn(1, 2, 1 * kMs, kT0);
  EXPECT_EQ(EndOf(a), kT0 + 1 * kMs);
  EXPECT_EQ(EndOf(b), kT0 + 2 * kMs);
}

TEST_F(SimgpuTimelineUnit, AJoinEndsWhenItsContextsEarlierKernelsHave) {
  Init(SchedMode::kTimeSlice);
  dev().streams_concurrent = 1;
  uint64_t a = LaunchOn(1, 1, 1 * kMs, kT0);
  uint64_t b = LaunchOn(1, 2, 3 * kMs, kT0);
  uint64_t other = LaunchOn(2, 1, 10 * kMs, kT0);
  uint64_t join = EnqueueJoin(dev(), 1, kT0);
  uint64_t later = LaunchOn(1, 1, 1 * kMs, kT0);  // a join holds nothing back
  // Slices of 2 ms: a and b share [0, 2) (a ends), context 2 runs [2, 4), later and b share
  // [4, 6) (later ends), context 2 runs [6, 8), b ends at 9 ms.
  EXPECT_EQ(EndOf(a), kT0 + 2 * kMs);
  EXPECT_EQ(EndOf(later), kT0 + 6 * kMs);
  uint64_t b_end = EndOf(b);
  EXPECT_EQ(EndOf(join), b_end);
  EXPECT_GT(EndOf(other), b_end);
  // With nothing unfinished, a join has ended at once.
  uint64_t idle = EnqueueJoin(dev(), 1, dev().sched_now_ns);
  uint64_t end = 0;
  EXPECT_TRUE(KernelEnded(dev(), idle, &end));
}

TEST_F(SimgpuTimelineUnit, HandingTheDeviceToAnotherContextCostsTheSwitch) {
  Init(SchedMode::kTimeSlice);
  dev().switch_ns = 100'000;
  // Context 1's work runs out within its slice: the switch to context 2 saves nothing, a tenth.
  uint64_t a = Launch(1, 1 * kMs, kT0);
  uint64_t b = Launch(2, 1 * kMs, kT0);
  uint64_t c = Launch(1, 1 * kMs, kT0 + 10 * kMs);
  EXPECT_EQ(EarliestEnd(dev(), b), kT0 + 2 * kMs + 10'000);
  EXPECT_EQ(EndOf(a), kT0 + 1 * kMs);  // the first context on an idle device: no switch
  EXPECT_EQ(EndOf(b), kT0 + 2 * kMs + 10'000);
  EXPECT_EQ(EndOf(c), kT0 + 11 * kMs + 10'000);  // back to context 1: another switch
  EXPECT_EQ(BusyNs(dev()), 3 * kMs);             // a switch is not busy time
}

TEST_F(SimgpuTimelineUnit, PreemptingARunningKernelCostsTheWholeSwitch) {
  Init(SchedMode::kTimeSlice);
  dev().switch_ns = 100'000;
  uint64_t a = Launch(1, 3 * kMs, kT0);  // longer than its 2 ms slice: preempted
  uint64_t b = Launch(2, 1 * kMs, kT0);
  EXPECT_EQ(EndOf(b), kT0 + 3 * kMs + 100'000);
  // Back to context 1 after b ran out of work: a tenth.
  EXPECT_EQ(EndOf(a), kT0 + 4 * kMs + 110'000);
  EXPECT_EQ(SwitchedNs(dev()), 110'000u);
}

TEST_F(SimgpuTimelineUnit, EachPidIsSampledOnItsOwnPhase) {
  Init(SchedMode::kTimeSlice);
  dev().nvml_mode = static_cast<uint32_t>(NvmlMode::kOwn);
  const uint64_t period = dev().nvml_period_ns;
  int p = PidStatIndex(dev(), 4242, [](int) { return true; });
  int q = PidStatIndex(dev(), 4243, [](int) { return true; });
  uint64_t phase_p = dev().pids[p].phase_ns;
  EXPECT_LT(phase_p, period);
  EXPECT_NE(phase_p, dev().pids[q].phase_ns);
  // A kernel within one of p's periods lands in that period's bucket whole.
  uint64_t epoch = PidPeriodAt(dev(), p, kT0) + 2;
  uint64_t start = PidPeriodEnd(dev(), p, epoch) - period + 10 * kMs;
  Advance(dev(), 0, start);
  ASSERT_NE(Enqueue(dev(), 1, p, {}, 5 * kMs, start), 0u);
  Advance(dev(), 0, start + 20 * kMs);
  EXPECT_EQ(PidBusyInBucket(dev(), p, epoch), 5 * kMs);
  EXPECT_EQ(PidPeriodAt(dev(), p, PidPeriodEnd(dev(), p, epoch)), epoch + 1);
  EXPECT_EQ(PidPeriodAt(dev(), p, PidPeriodEnd(dev(), p, epoch) - 1), epoch);
}

// MIG: timelines 1 and 2 are two MIG devices of one GPU (state_layout.h, kMaxTimelines).
TEST_F(SimgpuTimelineUnit, KernelsOfTwoMigDevicesRunSideBySide) {
  Init(SchedMode::kTimeSlice);
  dev().switch_ns = 100'000;
  Advance(dev(), 0, kT0);
  // Contexts 1 and 3 share MIG device 1 and take turns; context 2 has MIG device 2 to itself.
  uint64_t a = Enqueue(dev(), 1, 0, {}, 10 * kMs, kT0, 0, 1);
  uint64_t b = Enqueue(dev(), 2, 1, {}, 10 * kMs, kT0, 0, 2);
  uint64_t c = Enqueue(dev(), 3, 2, {}, 10 * kMs, kT0, 0, 1);
  EXPECT_EQ(EndOf(b), kT0 + 10 * kMs);  // as if alone
  // Device 1: 2 ms slices, a preemption (the whole switch) at every hand-over while a runs, a
  // tenth once its work is done.
  EXPECT_EQ(EndOf(a), kT0 + 18 * kMs + 8 * 100'000);
  EXPECT_EQ(EndOf(c), kT0 + 20 * kMs + 8 * 100'000 + 10'000);
  EXPECT_EQ(TimelineBusyNs(dev(), 1), 20 * kMs);
  EXPECT_EQ(TimelineBusyNs(dev(), 2), 10 * kMs);
  EXPECT_EQ(BusyNs(dev()), 30 * kMs);
  EXPECT_EQ(PidBusyNs(dev(), 1), 10 * kMs);
  EXPECT_EQ(SwitchedNs(dev()), 8 * 100'000u + 10'000u);
}

TEST_F(SimgpuTimelineUnit, FifoRunsEachMigDeviceInItsOwnOrder) {
  Init(SchedMode::kFifo);
  Advance(dev(), 0, kT0);
  uint64_t a = Enqueue(dev(), 1, 0, {}, 4 * kMs, kT0, 0, 1);
  uint64_t b = Enqueue(dev(), 2, 1, {}, 3 * kMs, kT0, 0, 2);
  uint64_t c = Enqueue(dev(), 1, 0, {}, 1 * kMs, kT0, 0, 1);
  EXPECT_EQ(EarliestEnd(dev(), c), kT0 + 5 * kMs);  // behind a alone
  EXPECT_EQ(EndOf(b), kT0 + 3 * kMs);
  EXPECT_EQ(EndOf(a), kT0 + 4 * kMs);
  EXPECT_EQ(EndOf(c), kT0 + 5 * kMs);
}

TEST_F(SimgpuTimelineUnit, AKernelWaitsForAKernelOfAnotherMigDevice) {
  Init(SchedMode::kTimeSlice);
  Advance(dev(), 0, kT0);
  // x on MIG device 1 comes first in the ring; y on it waits for w on MIG device 2, which one
  // Advance() runs first.
  uint64_t x = Enqueue(dev(), 1, 0, {}, 5 * kMs, kT0, 0, 1);
  uint64_t w = Enqueue(dev(), 2, 1, {}, 10 * kMs, kT0, 0, 2);
  uint64_t y = Enqueue(dev(), 1, 0, KernelRef{0, w}, 1 * kMs, kT0, 0, 1);
  Advance(dev(), 0, kT0 + 100 * kMs);
  uint64_t end = 0;
  ASSERT_TRUE(KernelEnded(dev(), x, &end));
  EXPECT_EQ(end, kT0 + 5 * kMs);
  ASSERT_TRUE(KernelEnded(dev(), w, &end));
  EXPECT_EQ(end, kT0 + 10 * kMs);
  ASSERT_TRUE(KernelEnded(dev(), y, &end));
  EXPECT_EQ(end, kT0 + 11 * kMs);
}

TEST_F(SimgpuTimelineUnit, AMigDeviceMadeAgainStartsAfresh) {
  Init(SchedMode::kTimeSlice);
  Advance(dev(), 0, kT0);
  uint64_t a = Enqueue(dev(), 1, 0, {}, 3 * kMs, kT0, 0, 1);
  EXPECT_EQ(EndOf(a), kT0 + 3 * kMs);
  ResetTimeline(dev(), 1);
  EXPECT_EQ(TimelineBusyNs(dev(), 1), 0u);
  EXPECT_EQ(dev().timelines[1].slice_ctx, 0u);
  EXPECT_EQ(BusyNs(dev()), 3 * kMs);  // the device's total keeps it
}

}  // namespace
}  // namespace simgpu
