#include "analysis.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace tessera::gpu_check {

std::vector<Interval> Union(std::vector<Interval> intervals) {
  std::erase_if(intervals, [](const Interval& i) { return i.end_ns <= i.start_ns; });
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& x, const Interval& y) { return x.start_ns < y.start_ns; });
  std::vector<Interval> out;
  for (const Interval& i : intervals) {
    if (!out.empty() && i.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t Length(const std::vector<Interval>& disjoint) {
  int64_t total = 0;
  for (const Interval& i : disjoint) total += i.length();
  return total;
}

int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].start_ns, b[j].start_ns);
    int64_t hi = std::min(a[i].end_ns, b[j].end_ns);
    if (hi > lo) total += hi - lo;
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

std::vector<Interval> Clip(const std::vector<Interval>& a, Interval window) {
  std::vector<Interval> out;
  for (const Interval& i : a) {
    Interval c{std::max(i.start_ns, window.start_ns), std::min(i.end_ns, window.end_ns)};
    if (c.end_ns > c.start_ns) out.push_back(c);
  }
  return out;
}

std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (const Interval& x : a) {
    while (j < b.size() && b[j].end_ns <= x.start_ns) ++j;
    int64_t cur = x.start_ns;
    for (size_t k = j; k < b.size() && b[k].start_ns < x.end_ns; ++k) {
      if (b[k].start_ns > cur) out.push_back({cur, b[k].start_ns});
      cur = std::max(cur, b[k].end_ns);
    }
    if (cur < x.end_ns) out.push_back({cur, x.end_ns});
  }
  return out;
}

double OverlapFraction(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> ua = Union(a), ub = Union(b);
  int64_t shorter = std::min(Length(ua), Length(ub));
  if (shorter == 0) return 0;
  return static_cast<double>(IntersectionLength(ua, ub)) / static_cast<double>(shorter);
}

namespace {

// ShareOf over unions already made.
Share ShareOfUnions(const std::vector<Interval>& own_union,
                    const std::vector<Interval>& others_union, Interval window) {
  Share s;
  s.window_ns = window.length();
  std::vector<Interval> inside = Clip(own_union, window);
  int64_t all = Length(inside);
  s.busy_ns = Length(Subtract(inside, others_union));
  s.excluded_ns = all - s.busy_ns;
  if (s.window_ns > 0) s.percent = 100.0 * static_cast<double>(s.busy_ns) / s.window_ns;
  return s;
}

}  // namespace

Share ShareOf(const std::vector<Interval>& own, const std::vector<Interval>& others,
              Interval window) {
  return ShareOfUnions(Union(own), Union(others), window);
}

Summary Summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  double sum = 0;
  for (double v : values) sum += v;
  s.count = n;
  s.min = values.front();
  s.max = values.back();
  s.mean = sum / static_cast<double>(n);
  s.p50 = values[(n + 1) / 2 - 1];
  s.p90 = values[(9 * n + 9) / 10 - 1];
  return s;
}

std::vector<double> Durations(const std::vector<Interval>& intervals, double unit_ns) {
  std::vector<double> out;
  out.reserve(intervals.size());
  for (const Interval& i : intervals) out.push_back(static_cast<double>(i.length()) / unit_ns);
  return out;
}

namespace {

// Whether launch k's record is inside `stamps` and has a valid span.
bool ValidRecord(const std::vector<uint64_t>& stamps, size_t k) {
  if (kStampsPerLaunch * (k + 1) > stamps.size()) return false;
  uint64_t start = stamps[kStampsPerLaunch * k], end = stamps[kStampsPerLaunch * k + 1];
  return start != 0 && end != 0 && end >= start;
}

}  // namespace

std::vector<Interval> IntervalsFromStamps(const std::vector<uint64_t>& stamps, size_t launches,
                                          size_t* missing) {
  std::vector<Interval> out;
  size_t lost = 0;
  for (size_t k = 0; k < launches; ++k) {
    if (!ValidRecord(stamps, k)) {
      ++lost;
      continue;
    }
    const uint64_t* r = &stamps[kStampsPerLaunch * k];
    out.push_back({static_cast<int64_t>(r[0]), static_cast<int64_t>(r[1])});
  }
  if (missing != nullptr) *missing = lost;
  return out;
}

std::vector<Interval> GapsFromStamps(const std::vector<uint64_t>& stamps, size_t launches) {
  std::vector<Interval> out;
  for (size_t k = 0; k < launches; ++k) {
    if (!ValidRecord(stamps, k)) continue;
    const uint64_t* r = &stamps[kStampsPerLaunch * k];
    for (size_t g = 0; g < kGapSlots; ++g) {
      uint64_t from = r[2 + 2 * g], to = r[3 + 2 * g];
      if (from == 0 || to <= from) break;
      // Clipped to the span: a gap is the kernel's own, never outside it.
      Interval gap{std::max(static_cast<int64_t>(from), static_cast<int64_t>(r[0])),
                   std::min(static_cast<int64_t>(to), static_cast<int64_t>(r[1]))};
      if (gap.end_ns > gap.start_ns) out.push_back(gap);
    }
  }
  return out;
}

std::vector<Interval> Running(const std::vector<Interval>& spans,
                              const std::vector<Interval>& gaps) {
  return Subtract(Union(spans), Union(gaps));
}

size_t CountPreempted(const std::vector<Interval>& spans, const std::vector<Interval>& gaps) {
  std::vector<Interval> g = Union(gaps);
  size_t count = 0;
  for (const Interval& s : spans) {
    // The first gap ending after the span starts: preempted when it starts before the span ends.
    auto it = std::upper_bound(g.begin(), g.end(), s.start_ns,
                               [](int64_t t, const Interval& i) { return t < i.end_ns; });
    if (it != g.end() && it->start_ns < s.end_ns) ++count;
  }
  return count;
}

SliceEstimate EstimateSlices(const std::vector<Interval>& a, const std::vector<Interval>& b,
                             int64_t tolerance_ns) {
  SliceEstimate e;
  std::vector<Interval> union_of[2] = {Union(a), Union(b)};
  e.overlap_ns = IntersectionLength(union_of[0], union_of[1]);
  e.overlap_fraction = OverlapFraction(a, b);

  struct Item {
    int64_t start_ns, end_ns;
    int owner;
  };
  std::vector<Item> items;
  const std::vector<Interval>* own[2] = {&a, &b};
  for (int owner = 0; owner < 2; ++owner) {
    const std::vector<Interval>& other = union_of[1 - owner];
    // The other process's intervals by start, with the latest end so far: whether one of them
    // covers an interval of this one.
    std::vector<Interval> by_start = *own[1 - owner];
    std::sort(by_start.begin(), by_start.end(),
              [](const Interval& x, const Interval& y) { return x.start_ns < y.start_ns; });
    std::vector<int64_t> latest_end(by_start.size());
    for (size_t k = 0; k < by_start.size(); ++k) {
      latest_end[k] = std::max(by_start[k].end_ns, k > 0 ? latest_end[k - 1] : INT64_MIN);
    }
    for (const Interval& x : *own[owner]) {
      if (x.end_ns < x.start_ns) continue;
      // The other process's busy time inside x.
      auto it = std::upper_bound(other.begin(), other.end(), x.start_ns,
                                 [](int64_t t, const Interval& i) { return t < i.end_ns; });
      int64_t inside = 0;
      for (; it != other.end() && it->start_ns < x.end_ns; ++it) {
        inside += std::min(it->end_ns, x.end_ns) - std::max(it->start_ns, x.start_ns);
      }
      // Lying within one of the other's kernels is being run beside it (or during its
      // preemption), not being preempted.
      size_t before =
          std::upper_bound(by_start.begin(), by_start.end(), x.start_ns + tolerance_ns,
                           [](int64_t t, const Interval& i) { return t < i.start_ns; }) -
          by_start.begin();
      bool covered = before > 0 && latest_end[before - 1] >= x.end_ns - tolerance_ns;
      if (inside > tolerance_ns && !covered) {
        ++e.preempted;
        items.push_back({x.start_ns, x.start_ns, owner});
        items.push_back({x.end_ns, x.end_ns, owner});
      } else {
        items.push_back({x.start_ns, x.end_ns, owner});
      }
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) {
    return std::tie(x.start_ns, x.end_ns, x.owner) < std::tie(y.start_ns, y.end_ns, y.owner);
  });

  std::vector<Run> runs;
  for (const Item& item : items) {
    if (runs.empty() || runs.back().owner != item.owner) {
      runs.push_back({item.owner, item.start_ns, item.end_ns, 1});
    } else {
      runs.back().end_ns = std::max(runs.back().end_ns, item.end_ns);
      ++runs.back().kernels;
    }
  }
  std::vector<double> slices[2], gaps;
  for (size_t k = 0; k + 1 < runs.size(); ++k) {
    gaps.push_back(static_cast<double>(runs[k + 1].start_ns - runs[k].end_ns) / 1e3);
  }
  if (runs.size() > 2) {
    e.runs.assign(runs.begin() + 1, runs.end() - 1);
  }
  for (const Run& r : e.runs) {
    slices[r.owner].push_back(static_cast<double>(r.end_ns - r.start_ns) / 1e6);
  }
  e.slice_ms[0] = Summarize(slices[0]);
  e.slice_ms[1] = Summarize(slices[1]);
  e.gap_us = Summarize(gaps);
  return e;
}

ClockOffset EstimateOffset(const std::vector<ClockProbe>& probes) {
  ClockOffset best;
  int64_t best_trip = 0;
  for (const ClockProbe& p : probes) {
    int64_t trip = p.host_after_ns - p.host_before_ns;
    if (trip < 0 || p.device_ns == 0) continue;
    if (best.valid && trip >= best_trip) continue;
    best.valid = true;
    best_trip = trip;
    best.device_ns = p.device_ns;
    best.device_minus_host_ns = p.device_ns - (p.host_before_ns + trip / 2);
    best.uncertainty_ns = (trip + 1) / 2;
  }
  return best;
}

ClockMap::ClockMap(ClockOffset before, ClockOffset after) {
  if (!before.valid) std::swap(before, after);
  if (!before.valid) return;
  valid_ = true;
  device0_ns_ = before.device_ns;
  offset0_ns_ = before.device_minus_host_ns;
  if (after.valid && after.device_ns != before.device_ns) {
    slope_ = static_cast<double>(after.device_minus_host_ns - before.device_minus_host_ns) /
             static_cast<double>(after.device_ns - before.device_ns);
  }
}

int64_t ClockMap::ToHost(int64_t device_ns) const {
  double offset =
      static_cast<double>(offset0_ns_) + slope_ * static_cast<double>(device_ns - device0_ns_);
  return device_ns - static_cast<int64_t>(std::llround(offset));
}

std::vector<NvmlSample> Dedupe(std::vector<NvmlSample> samples) {
  auto key = [](const NvmlSample& s) { return std::tie(s.pid, s.ts_us); };
  std::stable_sort(samples.begin(), samples.end(),
                   [&](const NvmlSample& x, const NvmlSample& y) { return key(x) < key(y); });
  samples.erase(
      std::unique(samples.begin(), samples.end(),
                  [&](const NvmlSample& x, const NvmlSample& y) { return key(x) == key(y); }),
      samples.end());
  return samples;
}

namespace {

std::vector<const NvmlSample*> SamplesOf(const std::vector<NvmlSample>& samples, uint32_t pid) {
  std::vector<const NvmlSample*> out;
  for (const NvmlSample& s : samples) {
    if (s.pid == pid) out.push_back(&s);
  }
  std::sort(out.begin(), out.end(),
            [](const NvmlSample* x, const NvmlSample* y) { return x->ts_us < y->ts_us; });
  return out;
}

}  // namespace

Summary StampSpacingMs(const std::vector<NvmlSample>& samples, uint32_t pid) {
  std::vector<const NvmlSample*> mine = SamplesOf(samples, pid);
  std::vector<double> spacing;
  for (size_t k = 1; k < mine.size(); ++k) {
    spacing.push_back(static_cast<double>(mine[k]->ts_us - mine[k - 1]->ts_us) / 1e3);
  }
  return Summarize(spacing);
}

Summary AlignmentMs(const std::vector<NvmlSample>& samples, uint32_t pid_a, uint32_t pid_b) {
  std::vector<uint64_t> other;
  for (const NvmlSample* s : SamplesOf(samples, pid_b)) other.push_back(s->ts_us);
  std::vector<double> distance;
  if (other.empty()) return Summarize(distance);
  for (const NvmlSample* s : SamplesOf(samples, pid_a)) {
    auto it = std::lower_bound(other.begin(), other.end(), s->ts_us);
    uint64_t best = UINT64_MAX;
    if (it != other.end()) best = *it - s->ts_us;
    if (it != other.begin()) best = std::min(best, s->ts_us - *(it - 1));
    distance.push_back(static_cast<double>(best) / 1e3);
  }
  return Summarize(distance);
}

NvmlVsTruth CompareWithTruth(const std::vector<NvmlSample>& samples, uint32_t pid,
                             const std::vector<Interval>& own, const std::vector<Interval>& others,
                             Interval window, uint64_t period_us) {
  NvmlVsTruth r;
  std::vector<Interval> own_union = Union(own), others_union = Union(others);
  std::vector<const NvmlSample*> mine = SamplesOf(samples, pid);
  double nvml_weighted = 0, truth_weighted = 0, covered_ns = 0;
  std::vector<double> errors;
  for (size_t k = 0; k < mine.size(); ++k) {
    int64_t end_us = static_cast<int64_t>(mine[k]->ts_us);
    int64_t start_us;
    if (period_us == 0) {
      if (k == 0) continue;
      start_us = static_cast<int64_t>(mine[k - 1]->ts_us);
    } else {
      start_us = end_us - static_cast<int64_t>(period_us);
    }
    Interval period{start_us * 1000, end_us * 1000};
    if (period.length() == 0 || period.start_ns < window.start_ns ||
        period.end_ns > window.end_ns) {
      continue;
    }
    double truth = ShareOfUnions(own_union, others_union, period).percent;
    double len = static_cast<double>(period.length());
    nvml_weighted += mine[k]->sm_util * len;
    truth_weighted += truth * len;
    covered_ns += len;
    errors.push_back(std::fabs(mine[k]->sm_util - truth));
  }
  r.periods = errors.size();
  r.covered_s = covered_ns / 1e9;
  if (covered_ns > 0) {
    r.nvml_percent = nvml_weighted / covered_ns;
    r.truth_percent = truth_weighted / covered_ns;
  }
  r.abs_error_points = Summarize(errors);
  return r;
}

bool Within(double value, double expect, double tolerance) {
  return std::fabs(value - expect) <= tolerance + 1e-9;
}

int64_t SwitchedNs(const std::vector<Interval>& running, const std::vector<Interval>& gaps,
                   Interval window) {
  return Length(Clip(Subtract(Union(gaps), Union(running)), window));
}

bool WithinBeside(double share, double expect, double tolerance, double neighbour_percent,
                  double switched_percent) {
  double floor = std::min(expect, 100 - neighbour_percent - switched_percent);
  return share <= expect + tolerance + 1e-9 && share >= floor - tolerance - 1e-9;
}

}  // namespace tessera::gpu_check
