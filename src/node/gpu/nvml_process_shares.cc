#include "node/gpu/nvml_process_shares.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace tessera::node {

ProcessShares NvmlProcessShares(const NvmlLibrary& nvml, const std::vector<GpuInfo>& gpus) {
  ProcessShares out;
  if (nvml.DeviceGetProcessUtilization == nullptr || nvml.DeviceGetHandleByUUID == nullptr) {
    return out;
  }
  // NVML stamps its samples with the wall clock, in microseconds.
  auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  unsigned long long since = static_cast<unsigned long long>(now_us) - kProcessShareWindowUs;
  for (const GpuInfo& g : gpus) {
    nvmlDevice_t dev = nullptr;
    if (nvml.DeviceGetHandleByUUID(g.uuid.c_str(), &dev) != NVML_SUCCESS) continue;
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
    // Each sample is one PID's percent of one sample period; a period in which a PID did not use
    // the GPU has no sample for it. The share is the mean over the periods that have samples.
    std::set<unsigned long long> periods;
    std::map<uint32_t, unsigned long long> sums;
    for (const nvmlProcessUtilizationSample_t& s : samples) {
      periods.insert(s.timeStamp);
      sums[s.pid] += std::min(s.smUtil, 100u);
    }
    std::map<uint32_t, unsigned>& shares = out[g.uuid];
    for (const auto& [pid, sum] : sums) {
      shares[pid] = static_cast<unsigned>((sum + periods.size() / 2) / periods.size());
    }
  }
  return out;
}

}  // namespace tessera::node
