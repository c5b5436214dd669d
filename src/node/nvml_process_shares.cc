#include "node/nvml_process_shares.h"

#include <algorithm>
#include <chrono>

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
    std::map<uint32_t, unsigned long long> latest;  // PID -> time of the sample kept
    std::map<uint32_t, unsigned>& shares = out[g.uuid];
    for (const nvmlProcessUtilizationSample_t& s : samples) {
      auto [it, fresh] = latest.try_emplace(s.pid, s.timeStamp);
      if (!fresh && s.timeStamp < it->second) continue;
      it->second = s.timeStamp;
      shares[s.pid] = std::min(s.smUtil, 100u);
    }
  }
  return out;
}

}  // namespace tessera::node
