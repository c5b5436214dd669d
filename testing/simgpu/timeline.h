// The device timeline: the kernels every process queued on a device, and the schedule that runs
// them. The schedule is worked out lazily: Advance(now), called whenever the state is locked, runs
// the device from where it was left up to `now` and settles the device time each kernel was given
// into busy totals and time buckets, so that sampling at any moment gives exact shares.
//
// Two modes (DeviceState::sched_mode):
// - time-sliced (a real GPU without MPS): when several contexts have work, the device runs one
//   context for `timeslice_ns`, then the next context with work, round robin in context-id order;
//   a kernel still running when its context's slice ends is preempted and resumes, with the time
//   it still needs, in that context's next slice. A context whose work runs out, or whose next
//   kernel waits for another kernel, gives up the rest of its slice. Handing the device to another
//   context first costs `switch_ns` of idle device time. Within a context, kernels of different
//   lanes (its streams) run together, sharing the device equally (each gets 1/n of it, as kernels
//   that fill the SMs do); a kernel of lane 0 (the legacy stream, or every kernel when the
//   device's `streams_concurrent` is 0) starts after all of its context's earlier kernels and
//   before any of its later ones. A join point (EnqueueJoin) ends as soon as its context's
//   earlier kernels have.
// - FIFO: one kernel at a time in launch order across all contexts, each to its end (lanes and
//   switch cost do not apply).
// A kernel may wait for another one (cuStreamWaitEvent, `wait_<K>` kernels): it does not start
// before that one has ended; a context's later kernels wait behind it.
//
// A device has one timeline (the whole GPU) unless it is in MIG mode; then each MIG device (a
// compute instance, with SMs of its own) has a timeline of its own, and its kernels run beside
// those of the other MIG devices, neither slowing the other, as on a real GPU whose instances
// are isolated in hardware. Each timeline is scheduled as above on its own (slices, switches,
// its contexts' lanes); kernels of all timelines share the device's ring of queued kernels and
// its numbering (seq), and a kernel may wait for one of another timeline.
//
// Since later launches of other contexts change when a queued kernel ends, kernels are known by
// seq (per device, from 1), not by end time: KernelEnded() says whether one has ended and when,
// EarliestEnd() when it ends if nothing else is launched (only later launches delay it).
//
// Thread-safety: every function here requires the state mutex (SharedState::Lock) to be held.
#pragma once

#include <cstdint>
#include <functional>

#include "state_layout.h"

namespace simgpu {

// A kernel on a device's timeline; seq 0: none.
struct KernelRef {
  int device = -1;
  uint64_t seq = 0;
};

// For a kernel of another device that a queued kernel waits for: when it ended, or UINT64_MAX
// while it has not. Advance() asks it (SharedState advances that device first).
using EndOnOtherDevice = std::function<uint64_t(int device, uint64_t seq)>;

// Sets up an empty timeline in `mode` with slices of `timeslice_ns`, the idealised device otherwise
// (no switch cost, serial streams, NVML periods of 1/6 s aligned for every PID); the caller sets
// the imperfections' fields after.
void InitTimeline(DeviceState& dev, SchedMode mode, uint64_t timeslice_ns);

// Runs the schedule of every timeline up to `now` (a `now` already passed changes nothing):
// kernels run, are preempted and end as the mode says; their device time is settled into the
// totals and buckets.
// `device` is this device's index (a kernel waiting for one of the same device is resolved here);
// `other` answers for kernels of other devices (empty: they count as ended).
void Advance(DeviceState& dev, int device, uint64_t now, const EndOnOtherDevice& other = {});

// Advance() for device `device` of the machine, first bringing to `now` the devices whose kernels
// its queued kernels wait for (a device already being advanced on the way answers as it stands).
void AdvanceDevice(StateFile& file, int device, uint64_t now);

// Queues a kernel of `duration_ns` for context `ctx_id`, lane `lane` (its stream; 0: a barrier
// of the context) and PID table entry `pid_stat` (-1: none), on timeline `timeline` (0: the
// whole GPU; a MIG device's: its MigSlotValue, mig_state.h), to start no earlier than kernel
// `after` has ended (seq 0: nothing). A context's kernels all go on one timeline. Call
// Advance(now) first. Returns its seq, or 0 (changing nothing) when the ring is full: the caller
// waits until EarliestRoom() and retries.
uint64_t Enqueue(DeviceState& dev, uint32_t ctx_id, int pid_stat, KernelRef after,
                 uint64_t duration_ns, uint64_t now, uint32_t lane = 0, uint32_t timeline = 0);

// Queues a join point of context `ctx_id` (on its timeline `timeline`): a seq that ends when every
// kernel the context queued before it has ended (at once when none is unfinished), taking no
// device time and holding back no later kernel. Call Advance(now) first. Returns 0 when the ring
// is full.
uint64_t EnqueueJoin(DeviceState& dev, uint32_t ctx_id, uint64_t now, uint32_t timeline = 0);

// Starts timeline `timeline` afresh (no holder, no busy time), for a MIG device just made. Its
// device time stays in the device's totals.
void ResetTimeline(DeviceState& dev, uint32_t timeline);

// Whether kernel `seq` has ended by the schedule's time (Advance first). When it has, *end_ns is
// its end, or 0 when it ended more than kEndCapacity kernels ago and its end is forgotten.
bool KernelEnded(const DeviceState& dev, uint64_t seq, uint64_t* end_ns);

// When kernel `seq` ends if nothing else is launched (its end when it has ended): FIFO order, or
// the round robin played forward over each context's queued work. Only later launches of other
// contexts can move it later (waits for other kernels aside), so a waiter sleeps until then and
// asks again.
uint64_t EarliestEnd(const DeviceState& dev, uint64_t seq);

// When the ring has room for another kernel at the soonest (`now` when it has room).
uint64_t EarliestRoom(const DeviceState& dev, uint64_t now);

// Device time given so far, all PIDs (on every timeline together) / one timeline since
// ResetTimeline / one PID table entry. Call Advance(now) first.
uint64_t BusyNs(const DeviceState& dev);
uint64_t TimelineBusyNs(const DeviceState& dev, uint32_t timeline);
// Device time spent switching between contexts so far (idle for everybody). Advance first.
uint64_t SwitchedNs(const DeviceState& dev);
uint64_t PidBusyNs(const DeviceState& dev, int pid_stat);

// Device time given within (now - window_ns, now], all PIDs (every timeline) / one PID table
// entry. The window is resolved to 10 ms (device) or the PID's sample periods. Call Advance(now)
// first.
uint64_t BusyInWindow(const DeviceState& dev, uint64_t now, uint64_t window_ns);
uint64_t PidBusyInWindow(const DeviceState& dev, int pid_stat, uint64_t now, uint64_t window_ns);

// NVML sample periods of PID table entry `pid_stat`: period `epoch` ends at PidPeriodEnd() (its
// phase plus epoch times the device's nvml_period_ns) and began one period earlier; PidPeriodAt(t)
// is the period in progress at t. PidBusyInBucket() is the device time the PID was given in a
// period, 0 when the period is no longer kept (kPidBuckets are). Call Advance(now) first.
uint64_t PidPeriodAt(const DeviceState& dev, int pid_stat, uint64_t t);
uint64_t PidPeriodEnd(const DeviceState& dev, int pid_stat, uint64_t epoch);
uint64_t PidBusyInBucket(const DeviceState& dev, int pid_stat, uint64_t epoch);

// Whether kill(pid, 0) finds the process.
bool PidExists(int pid);

// The PID table entry of `pid`, adding it when missing (reusing the entry of a PID that `alive`
// calls dead and that no queued kernel refers to, when the table is full). -1 when no entry can
// be had.
int PidStatIndex(DeviceState& dev, int pid, const std::function<bool(int)>& alive = PidExists);

}  // namespace simgpu
