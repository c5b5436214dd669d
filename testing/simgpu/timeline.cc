#include "timeline.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>

namespace simgpu {
namespace {

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

const Segment* Head(const DeviceState& dev) {
  return dev.segment_count == 0 ? nullptr : &dev.segments[dev.segment_head];
}

// The elapsed part of the running segment within (from, now].
uint64_t RunningPart(const Segment* head, uint64_t from, uint64_t now) {
  if (head == nullptr || head->start_ns >= now) return 0;
  uint64_t lo = std::max(head->start_ns, from);
  uint64_t hi = std::min(head->end_ns, now);
  return hi > lo ? hi - lo : 0;
}

}  // namespace

void Settle(DeviceState& dev, uint64_t now) {
  while (dev.segment_count > 0) {
    Segment& s = dev.segments[dev.segment_head];
    if (s.end_ns > now) break;
    uint64_t len = s.end_ns - s.start_ns;
    dev.settled_busy_ns += len;
    AddToBuckets(dev.buckets, kDeviceBuckets, kDeviceBucketNs, s.start_ns, s.end_ns);
    if (s.pid_stat >= 0) {
      PidStat& p = dev.pids[s.pid_stat];
      p.busy_ns += len;
      AddToBuckets(p.buckets, kPidBuckets, kPidBucketNs, s.start_ns, s.end_ns);
    }
    dev.segment_head = (dev.segment_head + 1) % kSegmentCapacity;
    --dev.segment_count;
  }
}

bool Enqueue(DeviceState& dev, int pid_stat, uint64_t not_before, uint64_t duration_ns,
             uint64_t now, uint64_t* start_ns, uint64_t* end_ns) {
  uint64_t start = std::max({now, dev.busy_until_ns, not_before});
  uint64_t end = start + duration_ns;
  if (dev.segment_count > 0) {
    Segment& last = dev.segments[(dev.segment_head + dev.segment_count - 1) % kSegmentCapacity];
    if (last.pid_stat == pid_stat && last.end_ns == start) {
      last.end_ns = end;
      dev.busy_until_ns = end;
      *start_ns = start;
      *end_ns = end;
      return true;
    }
  }
  if (dev.segment_count == kSegmentCapacity) return false;
  dev.segments[(dev.segment_head + dev.segment_count) % kSegmentCapacity] =
      Segment{start, end, pid_stat, 0};
  ++dev.segment_count;
  dev.busy_until_ns = end;
  if (pid_stat >= 0) dev.pids[pid_stat].last_launch_ns = now;
  *start_ns = start;
  *end_ns = end;
  return true;
}

uint64_t OldestSegmentEnd(const DeviceState& dev, uint64_t now) {
  const Segment* head = Head(dev);
  return head == nullptr ? now : head->end_ns;
}

uint64_t BusyNs(const DeviceState& dev, uint64_t now) {
  return dev.settled_busy_ns + RunningPart(Head(dev), 0, now);
}

uint64_t PidBusyNs(const DeviceState& dev, int pid_stat, uint64_t now) {
  const Segment* head = Head(dev);
  uint64_t running = head != nullptr && head->pid_stat == pid_stat ? RunningPart(head, 0, now) : 0;
  return dev.pids[pid_stat].busy_ns + running;
}

uint64_t BusyInWindow(const DeviceState& dev, uint64_t now, uint64_t window_ns) {
  uint64_t from = now > window_ns ? now - window_ns : 0;
  return SumBuckets(dev.buckets, kDeviceBuckets, kDeviceBucketNs, now, window_ns) +
         RunningPart(Head(dev), from, now);
}

uint64_t PidBusyInWindow(const DeviceState& dev, int pid_stat, uint64_t now, uint64_t window_ns) {
  uint64_t from = now > window_ns ? now - window_ns : 0;
  const Segment* head = Head(dev);
  uint64_t running =
      head != nullptr && head->pid_stat == pid_stat ? RunningPart(head, from, now) : 0;
  return SumBuckets(dev.pids[pid_stat].buckets, kPidBuckets, kPidBucketNs, now, window_ns) +
         running;
}

uint64_t PidBusyInBucket(const DeviceState& dev, int pid_stat, uint64_t epoch, uint64_t now) {
  const Bucket& b = dev.pids[pid_stat].buckets[epoch % kPidBuckets];
  uint64_t settled = b.epoch == epoch ? b.busy_ns : 0;
  const Segment* head = Head(dev);
  if (head == nullptr || head->pid_stat != pid_stat) return settled;
  uint64_t lo = std::max(head->start_ns, epoch * kPidBucketNs);
  uint64_t hi = std::min({head->end_ns, now, (epoch + 1) * kPidBucketNs});
  return settled + (hi > lo ? hi - lo : 0);
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
        queued = dev.segments[(dev.segment_head + k) % kSegmentCapacity].pid_stat == i;
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
