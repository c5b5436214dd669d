// NVML: running compute processes (v1/v2/v3 layouts) and per-process utilisation samples.
#include <algorithm>
#include <vector>

#include "clock.h"
#include "nvml_handles.h"
#include "timeline.h"

using namespace simgpu;

namespace {

constexpr unsigned kNoInstance = 0xFFFFFFFFu;  // not a MIG instance

struct ProcessUse {
  unsigned pid;
  unsigned long long used;
};

// Processes with a context or memory on the device, after freeing those that died.
nvmlReturn_t Processes(nvmlDevice_t device, std::vector<ProcessUse>* out) {
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  s->Sweep(lock, SharedState::SweepMode::kFull);
  for (const ProcessSlot& p : s->file().processes) {
    if (p.pid != 0 && (p.contexts[i] > 0 || p.used_bytes[i] > 0)) {
      out->push_back({static_cast<unsigned>(p.pid), p.used_bytes[i]});
    }
  }
  return NVML_SUCCESS;
}

template <typename Info>
nvmlReturn_t Fill(nvmlDevice_t device, unsigned* count, Info* infos, bool instances) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<ProcessUse> procs;
  if (nvmlReturn_t r = Processes(device, &procs); r != NVML_SUCCESS) return r;
  unsigned capacity = *count;
  *count = static_cast<unsigned>(procs.size());
  if (procs.size() > capacity) return NVML_ERROR_INSUFFICIENT_SIZE;
  if (!procs.empty() && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (size_t k = 0; k < procs.size(); ++k) {
    infos[k] = Info{};
    infos[k].pid = procs[k].pid;
    infos[k].usedGpuMemory = procs[k].used;
    if constexpr (sizeof(Info) > sizeof(nvmlProcessInfo_v1_t)) {
      if (instances) {
        infos[k].gpuInstanceId = kNoInstance;
        infos[k].computeInstanceId = kNoInstance;
      }
    }
  }
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

#undef nvmlDeviceGetComputeRunningProcesses  // define the v1 symbol under its own name
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos) {
  return Fill(device, infoCount, infos, false);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos) {
  return Fill(device, infoCount, infos, true);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  return Fill(device, infoCount, infos, true);
}

// As the real driver: each process is sampled every nvml_period_ns (1/6 s by default), on a phase
// of its own (nvml=own, the default: two processes' stamps never line up) or all on one
// (nvml=aligned); each finished sample period in which the process used the device yields one
// sample, smUtil being its whole percent of the period, stamped with the period's end
// (CLOCK_REALTIME us, through the state file's one offset). The periods still kept (16 per
// process) whose stamp is after lastSeenTimeStamp are returned, oldest first.
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount,
                                             unsigned long long lastSeenTimeStamp) {
  if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolve(device, &s, &i); r != NVML_SUCCESS) return r;
  std::vector<nvmlProcessUtilizationSample_t> samples;
  {
    SharedState::Lock lock(*s);
    uint64_t now = NowNs();
    int64_t offset_us = s->file().realtime_offset_us;
    DeviceState& d = s->file().devices[i];
    AdvanceDevice(s->file(), i, now);
    uint64_t period = d.nvml_period_ns;
    for (int k = 0; k < kMaxPidStats; ++k) {
      if (d.pids[k].pid == 0) continue;
      uint64_t current = PidPeriodAt(d, k, now);  // in progress: not sampled yet
      uint64_t first = current > kPidBuckets ? current - kPidBuckets : 0;
      for (uint64_t epoch = first; epoch < current; ++epoch) {
        uint64_t stamp = static_cast<uint64_t>(
            static_cast<int64_t>(PidPeriodEnd(d, k, epoch) / 1000) + offset_us);
        if (stamp <= lastSeenTimeStamp) continue;
        uint64_t busy = PidBusyInBucket(d, k, epoch);
        if (busy == 0) continue;
        nvmlProcessUtilizationSample_t sample{};
        sample.pid = static_cast<unsigned>(d.pids[k].pid);
        sample.timeStamp = stamp;
        sample.smUtil =
            static_cast<unsigned>(std::min<uint64_t>(100, (busy * 100 + period / 2) / period));
        samples.push_back(sample);
      }
    }
  }
  std::stable_sort(samples.begin(), samples.end(),
                   [](const auto& a, const auto& b) { return a.timeStamp < b.timeStamp; });
  if (samples.empty()) return NVML_ERROR_NOT_FOUND;
  unsigned capacity = *processSamplesCount;
  *processSamplesCount = static_cast<unsigned>(samples.size());
  if (utilization == nullptr || samples.size() > capacity) return NVML_ERROR_INSUFFICIENT_SIZE;
  for (size_t k = 0; k < samples.size(); ++k) utilization[k] = samples[k];
  return NVML_SUCCESS;
}

}  // extern "C"
