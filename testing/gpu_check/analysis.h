// gpu_check's analysis: pure functions over the busy intervals its kernels stamp with
// %globaltimer (the device's own clock) and over NVML's samples. Nothing here calls the driver,
// so everything is unit-tested without a GPU (analysis_test.cc).
//
//   std::vector<Interval> busy = Union(intervals);          // sorted, disjoint
//   Share s = ShareOf(intervals, {}, window);               // percent of the window
//   SliceEstimate e = EstimateSlices(a, b, 2000);           // two time-sliced processes
//
// Times are int64 nanoseconds on one clock (the device's, or the host's CLOCK_REALTIME after a
// ClockMap); an Interval is [start_ns, end_ns). Thread-compatible: plain values, no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::gpu_check {

struct Interval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t length() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
  bool operator==(const Interval&) const = default;
};

// The union of `intervals` as sorted, disjoint, non-empty intervals; touching ones are merged,
// empty ones (end <= start) dropped.
std::vector<Interval> Union(std::vector<Interval> intervals);

// Total length of sorted disjoint intervals (a Union's result).
int64_t Length(const std::vector<Interval>& disjoint);

// Length of a ∩ b, both sorted and disjoint.
int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b);

// The parts of sorted disjoint `a` inside `window`.
std::vector<Interval> Clip(const std::vector<Interval>& a, Interval window);

// The parts of sorted disjoint `a` outside sorted disjoint `b`.
std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b);

// |∪a ∩ ∪b| / min(|∪a|, |∪b|): 1 when the shorter one runs entirely beside the other, 0 when
// they never run at once or either is empty.
double OverlapFraction(const std::vector<Interval>& a, const std::vector<Interval>& b);

// Busy share of `window`: the time covered by `own`, less the time covered by `others` (without
// MPS, processes are time-sliced: a spin kernel preempted for another context's slice keeps its
// %globaltimer span running, so time another process ran is not this one's), in percent of the
// window's length. busy_ns and excluded_ns are the own union within the window after and before
// the exclusion's difference: excluded_ns = own ∩ others ∩ window.
struct Share {
  double percent = 0;
  int64_t busy_ns = 0;
  int64_t excluded_ns = 0;
  int64_t window_ns = 0;
};
Share ShareOf(const std::vector<Interval>& own, const std::vector<Interval>& others,
              Interval window);

// min, mean, nearest-rank median and 90th percentile (the value at rank ceil(0.9 n)), max.
// All zero when `values` is empty.
struct Summary {
  size_t count = 0;
  double min = 0;
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double max = 0;
};
Summary Summarize(std::vector<double> values);

// Durations (end - start) of the intervals, in the unit given by dividing nanoseconds by `unit_ns`.
std::vector<double> Durations(const std::vector<Interval>& intervals, double unit_ns);

// A stamps buffer holds one record of kStampsPerLaunch values per launch: its start and end,
// then up to kGapSlots gaps (from, to) in which the kernel was switched out for another context,
// as seen by a thread reading %globaltimer in a loop; unused gap slots are 0. A launch with more
// gaps than slots has end 0.
constexpr size_t kStampsPerLaunch = 16;
constexpr size_t kGapSlots = (kStampsPerLaunch - 2) / 2;

// The launches' spans (start to end). A launch whose stamps are missing (0) or reversed is
// skipped and counted in `*missing`.
std::vector<Interval> IntervalsFromStamps(const std::vector<uint64_t>& stamps, size_t launches,
                                          size_t* missing);

// The gaps of the launches IntervalsFromStamps keeps, each inside its launch's span.
std::vector<Interval> GapsFromStamps(const std::vector<uint64_t>& stamps, size_t launches);

// The time the kernels really ran: the union of `spans` less the union of `gaps` (a context is
// switched out whole, so no kernel of the process runs in another one's gap).
std::vector<Interval> Running(const std::vector<Interval>& spans,
                              const std::vector<Interval>& gaps);

// How many of `spans` hold at least one of `gaps` (kernels that were preempted).
size_t CountPreempted(const std::vector<Interval>& spans, const std::vector<Interval>& gaps);

// Time slicing seen from two processes, A (owner 0) and B (owner 1), each keeping the device
// busy with short kernels. Without MPS their kernels never run at once, so the merged timeline
// is a sequence of runs, one process's kernels back to back, each a time slice. A kernel running
// when the slice ends is preempted and resumes in the process's next slice; its span then
// contains the other process's run (it overlaps an interval of the other process by more than
// `tolerance_ns`). Such a kernel counts as two instants, its start (the run before the switch)
// and its end (the run after: the spin's deadline has passed, so it ends as it resumes). Runs
// are split at every change of owner in start order; the first and the last run (cut by the
// experiment's start and end) are left out. So a slice is underestimated, and a switch gap
// overestimated, by at most one kernel's length.
struct Run {
  int owner = 0;  // 0: A, 1: B
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  size_t kernels = 0;  // intervals and instants in the run
};
struct SliceEstimate {
  std::vector<Run> runs;        // the complete runs, in time order
  Summary slice_ms[2];          // run lengths of A and of B, in milliseconds
  Summary gap_us;               // from a run's end to the next run's start, in microseconds
  size_t preempted = 0;         // intervals overlapping the other process's
  int64_t overlap_ns = 0;       // |∪A ∩ ∪B|
  double overlap_fraction = 0;  // OverlapFraction(A, B)
};
SliceEstimate EstimateSlices(const std::vector<Interval>& a, const std::vector<Interval>& b,
                             int64_t tolerance_ns);

// Relating the device clock (%globaltimer) to the host's CLOCK_REALTIME: a probe is a kernel
// stamping its start between two host readings. The probe with the shortest round trip gives
// the offset (device - host at the midpoint), with half the round trip as its uncertainty.
struct ClockProbe {
  int64_t host_before_ns = 0;
  int64_t device_ns = 0;
  int64_t host_after_ns = 0;
};
struct ClockOffset {
  bool valid = false;
  int64_t device_ns = 0;  // the chosen probe's device time
  int64_t device_minus_host_ns = 0;
  int64_t uncertainty_ns = 0;
};
ClockOffset EstimateOffset(const std::vector<ClockProbe>& probes);

// Device time to host time, linear between two offsets (drift); one valid offset is used alone.
class ClockMap {
 public:
  ClockMap() = default;
  ClockMap(ClockOffset before, ClockOffset after);
  bool valid() const { return valid_; }
  int64_t ToHost(int64_t device_ns) const;
  Interval ToHost(Interval device) const {
    return {ToHost(device.start_ns), ToHost(device.end_ns)};
  }
  // Drift of the device clock against the host's, in parts per million (0 with one offset).
  double drift_ppm() const { return slope_ * 1e6; }

 private:
  bool valid_ = false;
  int64_t device0_ns_ = 0;
  int64_t offset0_ns_ = 0;
  double slope_ = 0;  // change of the offset per device nanosecond
};

// NVML's per-process samples (nvmlDeviceGetProcessUtilization): timeStamp is CPU time in
// microseconds, smUtil whole percent.
struct NvmlSample {
  uint32_t pid = 0;
  uint64_t ts_us = 0;
  uint32_t sm_util = 0;
  bool operator==(const NvmlSample&) const = default;
};

// Sorted by (pid, ts_us); repeated (pid, ts_us) pairs (the same sample polled twice) kept once.
std::vector<NvmlSample> Dedupe(std::vector<NvmlSample> samples);

// Spacing of one PID's sample timestamps, in milliseconds (from Dedupe'd samples).
Summary StampSpacingMs(const std::vector<NvmlSample>& samples, uint32_t pid);

// For every sample of `pid_a`, the distance to the nearest sample of `pid_b`, in milliseconds.
// Near 0 everywhere: NVML samples the processes at shared instants; otherwise each has its own.
Summary AlignmentMs(const std::vector<NvmlSample>& samples, uint32_t pid_a, uint32_t pid_b);

// One PID's smUtil against the ground truth. Each sample is taken to cover `period_us` before its
// timestamp, or with period_us = 0 the time since the PID's previous sample (the first sample
// then has no period and is not used). Only periods inside `window` (host ns) count. The truth
// of a period is ShareOf(own, others, period). nvml_percent and truth_percent are averages
// weighted by the periods' lengths (with period_us = 0: the smUtil sum over the covered time
// against the busy time); abs_error_points summarises |smUtil - truth| per period.
struct NvmlVsTruth {
  size_t periods = 0;
  double covered_s = 0;
  double nvml_percent = 0;
  double truth_percent = 0;
  Summary abs_error_points;
};
NvmlVsTruth CompareWithTruth(const std::vector<NvmlSample>& samples, uint32_t pid,
                             const std::vector<Interval>& own, const std::vector<Interval>& others,
                             Interval window, uint64_t period_us);

// Whether |value - expect| <= tolerance.
bool Within(double value, double expect, double tolerance);

// The time in `window` that the device ran neither of two processes' kernels while one of them
// had a kernel switched out (in its gaps): what switching between their contexts cost. `running`
// and `gaps` are both processes' (any order, any overlap).
int64_t SwitchedNs(const std::vector<Interval>& running, const std::vector<Interval>& gaps,
                   Interval window);

// A share checked beside a neighbour: at most expect + tolerance (a limit is a ceiling), and at
// least the smaller of expect and what the neighbour and the switching left of the device
// (100 - neighbour - switched, in percent), less tolerance. Beside a neighbour with work a
// time-sliced device loses time at every switch (about 157 us each on an H200), which no limiter
// of launches gives back.
bool WithinBeside(double share, double expect, double tolerance, double neighbour_percent,
                  double switched_percent);

}  // namespace tessera::gpu_check
