#include "node/gpu/nvml_process_shares.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tessera::node {
namespace {

// Slack, in periods, for jitter in the stamps and in the inferred period.
constexpr double kSlack = 0.1;

// Per PID: its samples' smUtil (at most 100) by stamp, a stamp given twice counted once.
using SamplesByPid = std::map<uint32_t, std::map<uint64_t, unsigned>>;

SamplesByPid ByPid(const std::vector<ProcessSample>& samples) {
  SamplesByPid out;
  for (const ProcessSample& s : samples) {
    unsigned& util = out[s.pid][s.stamp_us];
    util = std::max(util, std::min(s.sm_util, 100u));
  }
  return out;
}

double PeriodUs(const SamplesByPid& by_pid, const ShareWindow& w) {
  std::vector<uint64_t> gaps;
  for (const auto& [pid, stamps] : by_pid) {
    for (auto it = stamps.begin(), next = std::next(it); next != stamps.end(); ++it, ++next) {
      gaps.push_back(next->first - it->first);
    }
  }
  const auto min_period = static_cast<double>(w.min_period_us);
  const auto max_period = static_cast<double>(w.max_period_us);
  if (gaps.empty()) return min_period;
  const double smallest = static_cast<double>(*std::min_element(gaps.begin(), gaps.end()));
  double sum = 0;
  int count = 0;
  for (uint64_t g : gaps) {
    if (static_cast<double>(g) < 1.5 * smallest) {
      sum += static_cast<double>(g);
      ++count;
    }
  }
  double period = sum / count;
  // A multiple of the period: the largest whole fraction within the range (with slack for jitter).
  const double folds = std::ceil(period / (max_period * (1 + kSlack)));
  if (folds > 1) period /= folds;
  return std::clamp(period, min_period, max_period);
}

}  // namespace

uint64_t InferSamplePeriodUs(const std::vector<ProcessSample>& samples, const ShareWindow& window) {
  return static_cast<uint64_t>(std::llround(PeriodUs(ByPid(samples), window)));
}

std::map<uint32_t, double> ProcessSharesOf(const std::vector<ProcessSample>& samples,
                                           uint64_t now_us, const ShareWindow& window) {
  std::vector<ProcessSample> recent;
  const uint64_t since = now_us > window.window_us ? now_us - window.window_us : 0;
  for (const ProcessSample& s : samples) {
    if (s.stamp_us > since && s.stamp_us <= now_us) recent.push_back(s);
  }
  std::map<uint32_t, double> shares;
  if (recent.empty()) return shares;
  const SamplesByPid by_pid = ByPid(recent);
  if (std::all_of(by_pid.begin(), by_pid.end(),
                  [](const auto& entry) { return entry.second.size() == 1; })) {
    for (const auto& [pid, stamps] : by_pid) {  // one process per instant: its newest second
      const auto& [stamp, util] = *stamps.begin();
      if (now_us - stamp <= window.instant_stale_us) shares[pid] = util;
    }
    return shares;
  }
  const double period = PeriodUs(by_pid, window);
  // Where the span starts. Samples that reach back to the window's first period show the history
  // covers the window: the span is the window. Otherwise it starts at the GPU's oldest sample
  // (with slack for jitter): older history may be gone (the driver keeps a limited number of
  // periods; a process's periods before its oldest kept one are not counted, as their samples
  // would be gone too), or no process used the GPU before.
  uint64_t oldest = now_us;
  for (const auto& [pid, stamps] : by_pid) oldest = std::min(oldest, stamps.begin()->first);
  const double start = static_cast<double>(oldest - since) < period
                           ? static_cast<double>(since)
                           : static_cast<double>(oldest) - kSlack * period;
  for (const auto& [pid, stamps] : by_pid) {
    unsigned long long sum = 0;
    for (const auto& [stamp, util] : stamps) sum += util;
    // The process's periods end at its newest stamp minus and plus whole periods: count those
    // after `start` up to the newest (its own included), and those that ended since without a
    // sample (a tenth of a period late: its sample may still be on its way).
    const uint64_t newest = stamps.rbegin()->first;
    const double before = std::ceil((static_cast<double>(newest) - start) / period);
    const double after = std::floor(static_cast<double>(now_us - newest) / period - kSlack);
    const double periods = std::max(1.0, before) + std::max(0.0, after);
    shares[pid] = std::min(100.0, static_cast<double>(sum) / periods);
  }
  return shares;
}

ProcessShares NvmlProcessShares(const NvmlLibrary& nvml, const std::vector<GpuInfo>& gpus) {
  ProcessShares out;
  if (nvml.DeviceGetProcessUtilization == nullptr || nvml.DeviceGetHandleByUUID == nullptr) {
    return out;
  }
  // NVML stamps its samples with the wall clock, in microseconds.
  auto wall_us = [] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  };
  const ShareWindow window;
  for (const GpuInfo& g : gpus) {
    nvmlDevice_t dev = nullptr;
    if (nvml.DeviceGetHandleByUUID(g.uuid.c_str(), &dev) != NVML_SUCCESS) continue;
    const unsigned long long since = wall_us() - window.window_us;
    // The first call asks how many samples there are; a few more may arrive before the second.
    unsigned int count = 0;
    nvmlReturn_t r = nvml.DeviceGetProcessUtilization(dev, nullptr, &count, since);
    std::vector<nvmlProcessUtilizationSample_t> samples;
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
      count += 16;
      samples.resize(count);
      r = nvml.DeviceGetProcessUtilization(dev, samples.data(), &count, since);
    }
    if (r == NVML_ERROR_NOT_FOUND) {  // no process used the GPU in the window
      out[g.uuid];
      continue;
    }
    if (r != NVML_SUCCESS) continue;
    samples.resize(std::min<size_t>(count, samples.size()));
    std::vector<ProcessSample> converted;
    converted.reserve(samples.size());
    for (const nvmlProcessUtilizationSample_t& s : samples) {
      converted.push_back({s.pid, s.timeStamp, s.smUtil});
    }
    // `now` after the read, so that no sample is newer than it.
    out[g.uuid] = ProcessSharesOf(converted, wall_us(), window);
  }
  return out;
}

}  // namespace tessera::node
