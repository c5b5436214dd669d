#include "timeline.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <vector>

#include "device_spec.h"
#include "mix.h"

namespace simgpu {
namespace {

constexpr uint64_t kNever = UINT64_MAX;

void AddToBuckets(Bucket* buckets, int n, uint64_t width, uint64_t start, uint64_t end) {
  if (end <= start) return;
  uint64_t first = start / width;
  uint64_t last = (end - 1) / width;
  // Only the newest `n` epochs fit in the ring.
  if (last - first >= static_cast<uint64_t>(n)) first = last - n + 1;
  for (uint64_t e = first; e <= last; ++e) {
    uint64_t lo = std::max(start, e * width);
    uint64_t hi = std::min(end, (e + 1) * width);
    Bucket& b = buckets[e % n];
    if (b.epoch < e) b = Bucket{e, 0};
    if (b.epoch == e) b.busy_ns += hi - lo;
  }
}

uint64_t SumBuckets(const Bucket* buckets, int n, uint64_t width, uint64_t now,
                    uint64_t window_ns) {
  uint64_t from = now > window_ns ? now - window_ns : 0;
  uint64_t first = from / width + 1;  // whole buckets after the one holding `from`
  uint64_t last = now / width;
  uint64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    const Bucket& b = buckets[i];
    if (b.busy_ns != 0 && b.epoch >= first && b.epoch <= last) sum += b.busy_ns;
  }
  // The bucket holding `from` counts pro rata.
  const Bucket& edge = buckets[(from / width) % n];
  if (edge.epoch == from / width && edge.busy_ns != 0) {
    uint64_t covered = (from / width + 1) * width - from;
    sum += edge.busy_ns * covered / width;
  }
  return sum;
}

Segment& At(DeviceState& dev, uint32_t k) {
  return dev.segments[(dev.segment_head + k) % kSegmentCapacity];
}
const Segment& At(const DeviceState& dev, uint32_t k) {
  return dev.segments[(dev.segment_head + k) % kSegmentCapacity];
}

// The first ring position whose seq is at least `seq` (segment_count when none). Positions hold
// increasing seqs.
uint32_t LowerBound(const DeviceState& dev, uint64_t seq) {
  uint32_t lo = 0, hi = dev.segment_count;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (At(dev, mid).seq < seq) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// What handing the device to another context costs: `switch_ns` when the holder's slice ended
// with its work still running (its state is saved: compute preemption), a tenth of it when the
// holder had run out of work or waited (nothing to save but the switch itself).
uint64_t SwitchCost(const DeviceState& dev, bool yielded) {
  return yielded ? dev.switch_ns / 10 : dev.switch_ns;
}

// Settles device time [from, to) as busy, for the device and for PID table entry `pid_stat`.
void SettleBusy(DeviceState& dev, int pid_stat, uint64_t from, uint64_t to) {
  if (pid_stat < 0) return;
  PidStat& p = dev.pids[pid_stat];
  p.busy_ns += to - from;
  // Shifted by the PID's phase, its sample periods are the buckets [e, e + 1) x period.
  uint64_t shift = dev.nvml_period_ns - p.phase_ns;
  AddToBuckets(p.buckets, kPidBuckets, dev.nvml_period_ns, from + shift, to + shift);
}

// Settles device time [from, to) as busy on timeline `timeline` and for the device.
void SettleDevice(DeviceState& dev, uint32_t timeline, uint64_t from, uint64_t to) {
  dev.settled_busy_ns += to - from;
  dev.timelines[timeline].busy_ns += to - from;
  AddToBuckets(dev.buckets, kDeviceBuckets, kDeviceBucketNs, from, to);
}

// Ends kernel `s` at `at` and moves the ring's head past finished kernels.
void Finish(DeviceState& dev, Segment& s, uint64_t at) {
  s.remaining_ns = 0;
  s.done = 1;
  dev.ends[s.seq % kEndCapacity] = KernelEnd{s.seq, at};
  while (dev.segment_count > 0 && At(dev, 0).done) {
    dev.segment_head = (dev.segment_head + 1) % kSegmentCapacity;
    --dev.segment_count;
  }
}

// Gives kernel `s` its timeline alone over [from, to) and settles that time; ends it when it
// needs no more. Returns whether it ended.
bool Run(DeviceState& dev, Segment& s, uint64_t from, uint64_t to) {
  SettleDevice(dev, s.timeline, from, to);
  SettleBusy(dev, s.pid_stat, from, to);
  s.remaining_ns -= to - from;
  if (s.remaining_ns > 0) return false;
  Finish(dev, s, to);
  return true;
}

// Calls fn(position, segment) for every unfinished kernel of timeline `timeline`, oldest first,
// that no earlier unfinished kernel of its own context holds back: one of its lane or of lane 0
// holds it, and any one holds a kernel of lane 0. One pass over the ring.
template <typename Fn>
void ForEachUnheld(DeviceState& dev, uint32_t timeline, Fn fn) {
  struct Seen {
    uint32_t ctx;
    bool barrier;                 // an unfinished kernel of lane 0
    std::vector<uint32_t> lanes;  // lanes with an unfinished kernel
  };
  std::vector<Seen> seen;
  for (uint32_t k = 0; k < dev.segment_count; ++k) {
    Segment& s = At(dev, k);
    if (s.done || s.timeline != timeline) continue;
    auto it =
        std::find_if(seen.begin(), seen.end(), [&](const Seen& e) { return e.ctx == s.ctx_id; });
    bool held = false;
    if (it == seen.end()) {
      seen.push_back(Seen{s.ctx_id, false, {}});
      it = seen.end() - 1;
    } else {
      held = it->barrier || s.lane == 0 ||
             std::find(it->lanes.begin(), it->lanes.end(), s.lane) != it->lanes.end();
    }
    if (s.join) {
      // holds nothing back
    } else if (s.lane == 0) {
      it->barrier = true;
    } else if (std::find(it->lanes.begin(), it->lanes.end(), s.lane) == it->lanes.end()) {
      it->lanes.push_back(s.lane);
    }
    if (!held) fn(k, s);
  }
}

// Ends, at `at`, every join point of timeline `timeline` whose context has no earlier unfinished
// kernel.
void EndJoins(DeviceState& dev, uint32_t timeline, uint64_t at) {
  while (true) {
    uint64_t seq = 0;
    ForEachUnheld(dev, timeline, [&](uint32_t, Segment& s) {
      if (s.join && seq == 0) seq = s.seq;
    });
    if (seq == 0) return;
    Finish(dev, At(dev, LowerBound(dev, seq)), at);
  }
}

// The schedule of one timeline of a device over one Advance() call.
class Scheduler {
 public:
  Scheduler(DeviceState& dev, int device, const EndOnOtherDevice& other, uint32_t timeline)
      : dev_(dev),
        device_(device),
        other_(other),
        timeline_(timeline),
        sched_(dev.timelines[timeline]) {}

  // Runs the timeline from where the device's schedule was left (sched_now_ns) up to `now`.
  void RunUntil(uint64_t now) {
    uint64_t t = dev_.sched_now_ns;
    while (t < now && dev_.segment_count > 0) {
      uint64_t next = dev_.sched_mode == SchedMode::kFifo ? StepFifo(t, now) : StepSliced(t, now);
      if (next == kNever) break;
      t = next;
    }
  }

 private:
  // When `s` may start: 0 when it waits for nothing that has not ended, kNever while the kernel
  // it waits for runs (one of another timeline of this device has been run to `now` first:
  // Advance).
  uint64_t ReadyAt(const Segment& s) const {
    if (s.after_seq == 0) return 0;
    if (s.after_device == device_) {
      uint64_t end = 0;
      return KernelEnded(dev_, s.after_seq, &end) ? end : kNever;
    }
    return other_ ? other_(s.after_device, s.after_seq) : 0;
  }

  // Runs the timeline's oldest kernel from t. Returns the time reached, or kNever when nothing
  // runs before `now`.
  uint64_t StepFifo(uint64_t t, uint64_t now) {
    uint32_t k = 0;
    while (k < dev_.segment_count && (At(dev_, k).done || At(dev_, k).timeline != timeline_)) ++k;
    if (k == dev_.segment_count) return kNever;
    Segment& s = At(dev_, k);
    if (s.join) {
      Finish(dev_, s, t);
      return t;
    }
    uint64_t ready = ReadyAt(s);
    if (ready > t) return ready < now ? ready : kNever;
    uint64_t to = std::min(now, t + s.remaining_ns);
    if (Run(dev_, s, t, to)) EndJoins(dev_, timeline_, to);
    return to;
  }

  // The positions of context `ctx`'s kernels that may run at t: not held by an earlier kernel of
  // their context (lanes) and not waiting for another kernel.
  std::vector<uint32_t> Runnable(uint32_t ctx, uint64_t t) const {
    std::vector<uint32_t> out;
    ForEachUnheld(dev_, timeline_, [&](uint32_t k, const Segment& s) {
      if (!s.join && s.ctx_id == ctx && ReadyAt(s) <= t) out.push_back(k);
    });
    return out;
  }

  // Hands the device to the next context in round-robin order that has a kernel that may start
  // at t (the holder again when it is the only one), for a new slice; a different context than
  // the last holder first costs the context switch. Returns whether one was found; otherwise
  // *wake is when a waiting kernel may start (kNever: not known yet).
  bool NextSlice(uint64_t t, uint64_t* wake) {
    std::vector<uint32_t> seen;
    bool found_after = false, found_any = false;
    uint32_t after_ctx = 0, lowest_ctx = 0;
    *wake = kNever;
    bool holder_has_work = false;
    ForEachUnheld(dev_, timeline_, [&](uint32_t, const Segment& s) {
      if (s.ctx_id == sched_.slice_ctx && !s.join) holder_has_work = true;
      if (s.join || std::find(seen.begin(), seen.end(), s.ctx_id) != seen.end()) return;
      uint64_t ready = ReadyAt(s);
      if (ready > t) {
        *wake = std::min(*wake, ready);
        return;
      }
      seen.push_back(s.ctx_id);
      if (s.ctx_id > sched_.slice_ctx && (!found_after || s.ctx_id < after_ctx)) {
        found_after = true;
        after_ctx = s.ctx_id;
      }
      if (!found_any || s.ctx_id < lowest_ctx) {
        found_any = true;
        lowest_ctx = s.ctx_id;
      }
    });
    if (!found_any) return false;
    uint32_t pick = found_after ? after_ctx : lowest_ctx;
    uint64_t cost = sched_.slice_ctx != 0 && pick != sched_.slice_ctx
                        ? SwitchCost(dev_, sched_.slice_yielded != 0 || !holder_has_work)
                        : 0;
    sched_.slice_yielded = 0;
    sched_.slice_ctx = pick;
    sched_.slice_start_ns = t + cost;
    sched_.slice_end_ns = t + cost + dev_.timeslice_ns;
    return true;
  }

  // Runs the slice holder's runnable kernels together from t (each gets an equal part of the
  // timeline: they share its SMs) until its slice ends, its work runs out or waits, or now.
  uint64_t StepSliced(uint64_t t, uint64_t now) {
    bool holding = sched_.slice_ctx != 0 && t < sched_.slice_end_ns;
    std::vector<uint32_t> run;
    if (holding) {
      run = Runnable(sched_.slice_ctx, std::max(t, sched_.slice_start_ns));
      if (run.empty()) {  // its work ran out or waits: the slice is over
        sched_.slice_end_ns = t;
        sched_.slice_yielded = 1;
      }
    }
    if (run.empty()) {
      uint64_t wake = kNever;
      if (!NextSlice(t, &wake)) return wake < now ? wake : kNever;
      run = Runnable(sched_.slice_ctx, sched_.slice_start_ns);
    }
    if (t < sched_.slice_start_ns) {  // switching
      uint64_t to = std::min(now, sched_.slice_start_ns);
      dev_.switched_ns += to - t;
      return to;
    }
    uint64_t n = run.size();
    uint64_t first_end = kNever;
    for (uint32_t k : run) first_end = std::min(first_end, At(dev_, k).remaining_ns * n);
    uint64_t to = std::min({now, sched_.slice_end_ns, t + first_end});
    uint64_t share = (to - t) / n;
    SettleDevice(dev_, timeline_, t, to);
    std::vector<int> pids;
    std::vector<uint64_t> seqs;
    for (uint32_t k : run) {
      Segment& s = At(dev_, k);
      if (std::find(pids.begin(), pids.end(), s.pid_stat) == pids.end()) {
        pids.push_back(s.pid_stat);
        SettleBusy(dev_, s.pid_stat, t, to);
      }
      s.remaining_ns -= std::min(s.remaining_ns, share);
      if (s.remaining_ns == 0) seqs.push_back(s.seq);
    }
    // Finishing moves the ring: find the ended kernels by seq.
    for (uint64_t seq : seqs) {
      uint32_t k = LowerBound(dev_, seq);
      if (k < dev_.segment_count && At(dev_, k).seq == seq && !At(dev_, k).done) {
        Finish(dev_, At(dev_, k), to);
      }
    }
    if (!seqs.empty()) EndJoins(dev_, timeline_, to);
    return to;
  }

  DeviceState& dev_;
  const int device_;
  const EndOnOtherDevice& other_;
  const uint32_t timeline_;
  TimelineSchedule& sched_;
};

// The timelines of kernels of this device that timeline `timeline`'s unfinished kernels wait
// for and that are unfinished too.
std::vector<uint32_t> TimelinesWaitedFor(const DeviceState& dev, int device, uint32_t timeline) {
  std::vector<uint32_t> out;
  for (uint32_t k = 0; k < dev.segment_count; ++k) {
    const Segment& s = At(dev, k);
    if (s.done || s.timeline != timeline || s.after_seq == 0 || s.after_device != device) continue;
    uint32_t j = LowerBound(dev, s.after_seq);
    if (j == dev.segment_count) continue;
    const Segment& awaited = At(dev, j);
    if (awaited.seq == s.after_seq && !awaited.done && awaited.timeline != timeline &&
        std::find(out.begin(), out.end(), awaited.timeline) == out.end()) {
      out.push_back(awaited.timeline);
    }
  }
  return out;
}

}  // namespace

void InitTimeline(DeviceState& dev, SchedMode mode, uint64_t timeslice_ns) {
  dev.sched_mode = mode;
  dev.timeslice_ns = timeslice_ns;
  dev.next_seq = 1;
  dev.nvml_period_ns = 1'000'000'000 / 6;
}

void Advance(DeviceState& dev, int device, uint64_t now, const EndOnOtherDevice& other) {
  if (now <= dev.sched_now_ns) return;
  // Each timeline with work runs on its own, after the timelines its kernels wait for (a cycle
  // of waits answers as it stands, as between devices).
  enum : uint8_t { kToRun, kRunning, kRan };
  std::vector<uint8_t> state(kMaxTimelines, kToRun);
  std::function<void(uint32_t)> run = [&](uint32_t timeline) {
    state[timeline] = kRunning;
    for (uint32_t first : TimelinesWaitedFor(dev, device, timeline)) {
      if (state[first] == kToRun) run(first);
    }
    Scheduler(dev, device, other, timeline).RunUntil(now);
    state[timeline] = kRan;
  };
  std::vector<uint32_t> busy;
  for (uint32_t k = 0; k < dev.segment_count; ++k) {
    const Segment& s = At(dev, k);
    if (!s.done && std::find(busy.begin(), busy.end(), s.timeline) == busy.end()) {
      busy.push_back(s.timeline);
    }
  }
  for (uint32_t timeline : busy) {
    if (state[timeline] == kToRun) run(timeline);
  }
  dev.sched_now_ns = now;
}

namespace {

void AdvanceGuarded(StateFile& file, int device, uint64_t now, uint32_t* advancing) {
  *advancing |= 1u << device;
  EndOnOtherDevice other = [&](int d, uint64_t seq) -> uint64_t {
    if (d < 0 || d >= static_cast<int>(file.device_count)) return 0;
    if ((*advancing & (1u << d)) == 0) AdvanceGuarded(file, d, now, advancing);
    uint64_t end = 0;
    return KernelEnded(file.devices[d], seq, &end) ? end : kNever;
  };
  Advance(file.devices[device], device, now, other);
  *advancing &= ~(1u << device);
}

}  // namespace

void AdvanceDevice(StateFile& file, int device, uint64_t now) {
  uint32_t advancing = 0;
  AdvanceGuarded(file, device, now, &advancing);
}

namespace {

// Whether timeline `timeline` has an unfinished kernel.
bool HasWork(const DeviceState& dev, uint32_t timeline) {
  for (uint32_t k = 0; k < dev.segment_count; ++k) {
    if (!At(dev, k).done && At(dev, k).timeline == timeline) return true;
  }
  return false;
}

}  // namespace

uint64_t Enqueue(DeviceState& dev, uint32_t ctx_id, int pid_stat, KernelRef after,
                 uint64_t duration_ns, uint64_t now, uint32_t lane, uint32_t timeline) {
  if (dev.segment_count == kSegmentCapacity) return 0;
  uint64_t seq = dev.next_seq++;
  Segment s{};
  s.seq = seq;
  s.remaining_ns = duration_ns;
  s.after_seq = after.seq;
  s.after_device = after.device;
  s.ctx_id = ctx_id;
  s.pid_stat = pid_stat;
  s.lane = dev.streams_concurrent ? lane : 0;
  s.timeline = timeline;
  if (duration_ns == 0 && after.seq == 0 && !HasWork(dev, timeline)) {
    // Takes no device time and waits for nothing: it has ended already.
    s.done = 1;
    dev.ends[seq % kEndCapacity] = KernelEnd{seq, std::max(now, dev.sched_now_ns)};
  } else {
    At(dev, dev.segment_count) = s;
    ++dev.segment_count;
  }
  if (pid_stat >= 0) dev.pids[pid_stat].last_launch_ns = now;
  return seq;
}

uint64_t EnqueueJoin(DeviceState& dev, uint32_t ctx_id, uint64_t now, uint32_t timeline) {
  if (dev.segment_count == kSegmentCapacity) return 0;
  uint64_t seq = dev.next_seq++;
  Segment s{};
  s.seq = seq;
  s.ctx_id = ctx_id;
  s.pid_stat = -1;
  s.join = 1;
  s.timeline = timeline;
  At(dev, dev.segment_count) = s;
  ++dev.segment_count;
  EndJoins(dev, timeline, std::max(now, dev.sched_now_ns));
  return seq;
}

void ResetTimeline(DeviceState& dev, uint32_t timeline) {
  dev.timelines[timeline] = TimelineSchedule{};
}

bool KernelEnded(const DeviceState& dev, uint64_t seq, uint64_t* end_ns) {
  uint32_t k = LowerBound(dev, seq);
  if (k < dev.segment_count && At(dev, k).seq == seq && !At(dev, k).done) return false;
  if (seq >= dev.next_seq) return false;
  const KernelEnd& e = dev.ends[seq % kEndCapacity];
  *end_ns = e.seq == seq ? e.end_ns : 0;
  return true;
}

uint64_t EarliestEnd(const DeviceState& dev, uint64_t seq) {
  uint64_t end = 0;
  if (KernelEnded(dev, seq, &end)) return end;
  uint64_t t = dev.sched_now_ns;
  uint32_t last = LowerBound(dev, seq);
  // Only the kernels of its own timeline come before it.
  const Segment& goal = At(dev, last);
  if (dev.sched_mode == SchedMode::kFifo) {
    for (uint32_t k = 0; k <= last; ++k) {
      if (!At(dev, k).done && At(dev, k).timeline == goal.timeline) t += At(dev, k).remaining_ns;
    }
    return t;
  }
  // Time-sliced: the round robin played forward over each context's queued work as it stands
  // (the target's up to it: of its lane and lane 0 only, a lower bound when its context's streams
  // overlap), ignoring waits for other kernels.
  const TimelineSchedule& sched = dev.timelines[goal.timeline];
  uint32_t target = goal.ctx_id;
  std::map<uint32_t, uint64_t> work;
  for (uint32_t k = 0; k < dev.segment_count; ++k) {
    const Segment& s = At(dev, k);
    if (s.done || s.timeline != goal.timeline) continue;
    if (s.ctx_id != target) {
      work[s.ctx_id] += s.remaining_ns;
    } else if (k <= last && (goal.lane == 0 || s.lane == 0 || s.lane == goal.lane)) {
      work[s.ctx_id] += s.remaining_ns;
    }
  }
  if (work[target] == 0) return t;  // takes no device time: it ends when its turn comes
  uint32_t holder = sched.slice_ctx;
  if (sched.slice_start_ns > t && sched.slice_end_ns > t) t = sched.slice_start_ns;
  uint64_t slice_left = sched.slice_end_ns > t ? sched.slice_end_ns - t : 0;
  while (true) {
    auto it = work.find(holder);
    if (it != work.end() && it->second > 0 && slice_left > 0) {
      if (holder == target && it->second <= slice_left) return t + it->second;
      uint64_t ran = std::min(slice_left, it->second);
      t += ran;
      it->second -= ran;
    }
    // The next context with work after the holder, in context order (the holder again if alone).
    auto next = work.upper_bound(holder);
    while (next != work.end() && next->second == 0) ++next;
    if (next == work.end()) {
      next = work.begin();
      while (next != work.end() && next->second == 0) ++next;
    }
    if (next->first != holder) {
      auto held = work.find(holder);
      t += SwitchCost(dev, held == work.end() || held->second == 0);
    }
    holder = next->first;
    slice_left = dev.timeslice_ns;
  }
}

uint64_t EarliestRoom(const DeviceState& dev, uint64_t now) {
  if (dev.segment_count < kSegmentCapacity) return now;
  return EarliestEnd(dev, At(dev, 0).seq);
}

uint64_t BusyNs(const DeviceState& dev) {
  return dev.settled_busy_ns;
}

uint64_t TimelineBusyNs(const DeviceState& dev, uint32_t timeline) {
  return dev.timelines[timeline].busy_ns;
}

uint64_t SwitchedNs(const DeviceState& dev) {
  return dev.switched_ns;
}

uint64_t PidBusyNs(const DeviceState& dev, int pid_stat) {
  return dev.pids[pid_stat].busy_ns;
}

uint64_t BusyInWindow(const DeviceState& dev, uint64_t now, uint64_t window_ns) {
  return SumBuckets(dev.buckets, kDeviceBuckets, kDeviceBucketNs, now, window_ns);
}

uint64_t PidBusyInWindow(const DeviceState& dev, int pid_stat, uint64_t now, uint64_t window_ns) {
  uint64_t shift = dev.nvml_period_ns - dev.pids[pid_stat].phase_ns;
  return SumBuckets(dev.pids[pid_stat].buckets, kPidBuckets, dev.nvml_period_ns, now + shift,
                    window_ns);
}

uint64_t PidPeriodAt(const DeviceState& dev, int pid_stat, uint64_t t) {
  return (t + dev.nvml_period_ns - dev.pids[pid_stat].phase_ns) / dev.nvml_period_ns;
}

uint64_t PidPeriodEnd(const DeviceState& dev, int pid_stat, uint64_t epoch) {
  return epoch * dev.nvml_period_ns + dev.pids[pid_stat].phase_ns;
}

uint64_t PidBusyInBucket(const DeviceState& dev, int pid_stat, uint64_t epoch) {
  const Bucket& b = dev.pids[pid_stat].buckets[epoch % kPidBuckets];
  return b.epoch == epoch ? b.busy_ns : 0;
}

bool PidExists(int pid) {
  return kill(pid, 0) == 0 || errno != ESRCH;
}

int PidStatIndex(DeviceState& dev, int pid, const std::function<bool(int)>& alive) {
  int free_index = -1;
  for (int i = 0; i < kMaxPidStats; ++i) {
    if (dev.pids[i].pid == pid) return i;
    if (dev.pids[i].pid == 0 && free_index < 0) free_index = i;
  }
  if (free_index < 0) {
    // Reuse the entry of the dead PID that launched least recently and has nothing queued.
    uint64_t oldest = UINT64_MAX;
    for (int i = 0; i < kMaxPidStats; ++i) {
      const PidStat& p = dev.pids[i];
      if (p.last_launch_ns >= oldest) continue;
      if (alive(p.pid)) continue;
      bool queued = false;
      for (uint32_t k = 0; k < dev.segment_count && !queued; ++k) {
        queued = !At(dev, k).done && At(dev, k).pid_stat == i;
      }
      if (queued) continue;
      oldest = p.last_launch_ns;
      free_index = i;
    }
    if (free_index < 0) return -1;
  }
  dev.pids[free_index] = PidStat{};
  dev.pids[free_index].pid = pid;
  if (dev.nvml_mode == static_cast<uint32_t>(NvmlMode::kOwn)) {
    // A phase of its own, the same for the PID whichever process asks (splitmix64 of the PID).
    dev.pids[free_index].phase_ns =
        Mix(static_cast<uint64_t>(pid) + kGoldenGamma) % dev.nvml_period_ns;
  }
  return free_index;
}

}  // namespace simgpu
