#include "timeline.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <vector>

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

// Gives kernel `s` the device over [from, to) and settles that time; ends it when it needs no
// more. Returns whether it ended.
bool Run(DeviceState& dev, Segment& s, uint64_t from, uint64_t to) {
  uint64_t len = to - from;
  dev.settled_busy_ns += len;
  AddToBuckets(dev.buckets, kDeviceBuckets, kDeviceBucketNs, from, to);
  if (s.pid_stat >= 0) {
    PidStat& p = dev.pids[s.pid_stat];
    p.busy_ns += len;
    AddToBuckets(p.buckets, kPidBuckets, kPidBucketNs, from, to);
  }
  s.remaining_ns -= len;
  if (s.remaining_ns > 0) return false;
  s.done = 1;
  dev.ends[s.seq % kEndCapacity] = KernelEnd{s.seq, to};
  while (dev.segment_count > 0 && At(dev, 0).done) {
    dev.segment_head = (dev.segment_head + 1) % kSegmentCapacity;
    --dev.segment_count;
  }
  return true;
}

// The schedule of one device over one Advance() call.
class Scheduler {
 public:
  Scheduler(DeviceState& dev, int device, const EndOnOtherDevice& other)
      : dev_(dev), device_(device), other_(other) {}

  void RunUntil(uint64_t now) {
    uint64_t t = dev_.sched_now_ns;
    while (t < now && dev_.segment_count > 0) {
      uint64_t next = dev_.sched_mode == SchedMode::kFifo ? StepFifo(t, now) : StepSliced(t, now);
      if (next == kNever) break;
      t = next;
    }
    dev_.sched_now_ns = now;
  }

 private:
  // When `s` may start: 0 when it waits for nothing that has not ended, kNever while the kernel
  // it waits for runs.
  uint64_t ReadyAt(const Segment& s) const {
    if (s.after_seq == 0) return 0;
    if (s.after_device == device_) {
      uint64_t end = 0;
      return KernelEnded(dev_, s.after_seq, &end) ? end : kNever;
    }
    return other_ ? other_(s.after_device, s.after_seq) : 0;
  }

  // Runs the oldest kernel from t. Returns the time reached, or kNever when nothing runs
  // before `now`.
  uint64_t StepFifo(uint64_t t, uint64_t now) {
    Segment& s = At(dev_, 0);
    uint64_t ready = ReadyAt(s);
    if (ready > t) return ready < now ? ready : kNever;
    uint64_t to = std::min(now, t + s.remaining_ns);
    Run(dev_, s, t, to);
    return to;
  }

  // The position of context `ctx`'s oldest kernel at or after position `from`, or -1.
  int64_t OldestOf(uint32_t ctx, uint32_t from) const {
    for (uint32_t k = from; k < dev_.segment_count; ++k) {
      const Segment& s = At(dev_, k);
      if (!s.done && s.ctx_id == ctx) return k;
    }
    return -1;
  }

  // Hands the device to the next context in round-robin order whose oldest kernel may start at
  // t (the holder again when it is the only one), for a new slice. Returns its kernel's position,
  // or -1 with *wake set to when a waiting kernel may start (kNever: not known yet).
  int64_t NextSlice(uint64_t t, uint64_t* wake) {
    std::vector<uint32_t> seen;
    int64_t after = -1, lowest = -1;
    uint32_t after_ctx = 0, lowest_ctx = 0;
    *wake = kNever;
    for (uint32_t k = 0; k < dev_.segment_count; ++k) {
      const Segment& s = At(dev_, k);
      if (s.done || std::find(seen.begin(), seen.end(), s.ctx_id) != seen.end()) continue;
      seen.push_back(s.ctx_id);
      uint64_t ready = ReadyAt(s);
      if (ready > t) {
        *wake = std::min(*wake, ready);
        continue;
      }
      if (s.ctx_id > dev_.slice_ctx && (after < 0 || s.ctx_id < after_ctx)) {
        after = k;
        after_ctx = s.ctx_id;
      }
      if (lowest < 0 || s.ctx_id < lowest_ctx) {
        lowest = k;
        lowest_ctx = s.ctx_id;
      }
    }
    int64_t pick = after >= 0 ? after : lowest;
    if (pick >= 0) {
      dev_.slice_ctx = At(dev_, static_cast<uint32_t>(pick)).ctx_id;
      dev_.slice_end_ns = t + dev_.timeslice_ns;
    }
    return pick;
  }

  uint64_t StepSliced(uint64_t t, uint64_t now) {
    int64_t k = -1;
    if (dev_.slice_ctx != 0 && t < dev_.slice_end_ns) {
      k = OldestOf(dev_.slice_ctx, 0);
      if (k >= 0 && ReadyAt(At(dev_, static_cast<uint32_t>(k))) > t) k = -1;
      if (k < 0) dev_.slice_end_ns = t;
    }
    if (k < 0) {
      uint64_t wake = kNever;
      k = NextSlice(t, &wake);
      if (k < 0) return wake < now ? wake : kNever;
    }
    // Runs the holder's kernels back to back until its slice ends, its work runs out, or now.
    while (true) {
      Segment& s = At(dev_, static_cast<uint32_t>(k));
      uint64_t to = std::min({now, dev_.slice_end_ns, t + s.remaining_ns});
      uint32_t ctx = s.ctx_id;
      uint64_t seq = s.seq;
      bool ended = Run(dev_, s, t, to);
      t = to;
      if (!ended || t >= now || t >= dev_.slice_end_ns) return t;
      k = OldestOf(ctx, LowerBound(dev_, seq + 1));
      if (k < 0 || ReadyAt(At(dev_, static_cast<uint32_t>(k))) > t) break;
    }
    dev_.slice_end_ns = t;  // its work ran out or waits: the slice is over
    return t;
  }

  DeviceState& dev_;
  const int device_;
  const EndOnOtherDevice& other_;
};

}  // namespace

void InitTimeline(DeviceState& dev, SchedMode mode, uint64_t timeslice_ns) {
  dev.sched_mode = mode;
  dev.timeslice_ns = timeslice_ns;
  dev.next_seq = 1;
}

void Advance(DeviceState& dev, int device, uint64_t now, const EndOnOtherDevice& other) {
  if (now <= dev.sched_now_ns) return;
  Scheduler(dev, device, other).RunUntil(now);
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

uint64_t Enqueue(DeviceState& dev, uint32_t ctx_id, int pid_stat, KernelRef after,
                 uint64_t duration_ns, uint64_t now) {
  if (dev.segment_count == kSegmentCapacity) return 0;
  uint64_t seq = dev.next_seq++;
  Segment s{};
  s.seq = seq;
  s.remaining_ns = duration_ns;
  s.after_seq = after.seq;
  s.after_device = after.device;
  s.ctx_id = ctx_id;
  s.pid_stat = pid_stat;
  if (duration_ns == 0 && after.seq == 0 && dev.segment_count == 0) {
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
  if (dev.sched_mode == SchedMode::kFifo) {
    for (uint32_t k = 0; k <= last; ++k) {
      if (!At(dev, k).done) t += At(dev, k).remaining_ns;
    }
    return t;
  }
  // Time-sliced: the round robin played forward over each context's queued work as it stands
  // (the target's up to it), ignoring waits for other kernels.
  uint32_t target = At(dev, last).ctx_id;
  std::map<uint32_t, uint64_t> work;
  for (uint32_t k = 0; k < dev.segment_count; ++k) {
    const Segment& s = At(dev, k);
    if (!s.done && (s.ctx_id != target || k <= last)) work[s.ctx_id] += s.remaining_ns;
  }
  if (work[target] == 0) return t;  // takes no device time: it ends when its turn comes
  uint32_t holder = dev.slice_ctx;
  uint64_t slice_left = dev.slice_end_ns > t ? dev.slice_end_ns - t : 0;
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

uint64_t PidBusyNs(const DeviceState& dev, int pid_stat) {
  return dev.pids[pid_stat].busy_ns;
}

uint64_t BusyInWindow(const DeviceState& dev, uint64_t now, uint64_t window_ns) {
  return SumBuckets(dev.buckets, kDeviceBuckets, kDeviceBucketNs, now, window_ns);
}

uint64_t PidBusyInWindow(const DeviceState& dev, int pid_stat, uint64_t now, uint64_t window_ns) {
  return SumBuckets(dev.pids[pid_stat].buckets, kPidBuckets, kPidBucketNs, now, window_ns);
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
  return free_index;
}

}  // namespace simgpu
