// The device timeline: every kernel of every process runs on its device one at a time, in launch
// order. A launch appends a segment [start, end) with start = max(now, busy_until, not_before).
// Busy time counts only what has elapsed: finished segments are "settled" into totals and time
// buckets, and the segment running now counts its elapsed part. Sampling at any moment therefore
// gives exact shares.
//
// Thread-safety: every function here requires the state mutex (SharedState::Lock) to be held.
#pragma once

#include <cstdint>
#include <functional>

#include "state_layout.h"

namespace simgpu {

// Moves every segment that ended at or before `now` out of the ring into the totals and buckets.
void Settle(DeviceState& dev, uint64_t now);

// Queues `duration_ns` of work for PID table entry `pid_stat` (-1: none). Returns false, changing
// nothing, when the ring is full; the caller waits for the oldest segment to end and retries.
bool Enqueue(DeviceState& dev, int pid_stat, uint64_t not_before, uint64_t duration_ns,
             uint64_t now, uint64_t* start_ns, uint64_t* end_ns);

// The end of the oldest queued segment (when the ring has room again), or `now` when empty.
uint64_t OldestSegmentEnd(const DeviceState& dev, uint64_t now);

// Device time elapsed so far, all PIDs / one PID table entry. Call Settle(now) first.
uint64_t BusyNs(const DeviceState& dev, uint64_t now);
uint64_t PidBusyNs(const DeviceState& dev, int pid_stat, uint64_t now);

// Device time that elapsed within (now - window_ns, now], all PIDs / one PID table entry. The
// window is resolved to 10 ms (device) or 1/6 s (PID) buckets. Call Settle(now) first.
uint64_t BusyInWindow(const DeviceState& dev, uint64_t now, uint64_t window_ns);
uint64_t PidBusyInWindow(const DeviceState& dev, int pid_stat, uint64_t now, uint64_t window_ns);

// Device time PID table entry `pid_stat` used in PID bucket `epoch` ([epoch, epoch + 1) times
// kPidBucketNs), the running segment's elapsed part included; 0 when the bucket is no longer
// kept. Call Settle(now) first.
uint64_t PidBusyInBucket(const DeviceState& dev, int pid_stat, uint64_t epoch, uint64_t now);

// Whether kill(pid, 0) finds the process.
bool PidExists(int pid);

// The PID table entry of `pid`, adding it when missing (reusing the entry of a PID that `alive`
// calls dead and that no queued segment refers to, when the table is full). -1 when no entry can
// be had.
int PidStatIndex(DeviceState& dev, int pid, const std::function<bool(int)>& alive = PidExists);

}  // namespace simgpu
