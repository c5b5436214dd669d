// NVML: running compute processes (v1/v2/v3 layouts; simgpu's contexts are all compute, so the
// graphics and MPS lists are empty), process names, and per-process utilisation samples. In MIG
// mode, as NVML's reference describes: a GPU handle lists the processes of all its MIG devices
// (the aggregate a privileged caller gets), a MIG device handle those of that MIG device, and
// process utilisation is not supported.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "clock.h"
#include "device_spec.h"
#include "mig_state.h"
#include "mix.h"
#include "nvml_handles.h"
#include "nvml_mig.h"
#include "timeline.h"

using namespace simgpu;

namespace {

constexpr unsigned kNoInstance = 0xFFFFFFFFu;  // not a MIG instance

struct ProcessUse {
  unsigned pid;
  unsigned long long used;
  uint32_t mig;  // ProcessSlot::mig_instance: the MIG device it uses, or 0
};

// Processes with a context or memory on the device (a MIG device handle: on that MIG device),
// after freeing those that died.
nvmlReturn_t Processes(nvmlDevice_t device, std::vector<ProcessUse>* out) {
  SharedState* s;
  int i;
  uint32_t mig;
  if (nvmlReturn_t r = NvmlResolveAny(device, &s, &i, &mig); r != NVML_SUCCESS) return r;
  SharedState::Lock lock(*s);
  s->Sweep(lock, SharedState::SweepMode::kFull);
  for (const ProcessSlot& p : s->file().processes) {
    if (mig != 0 && p.mig_instance[i] != mig) continue;
    if (p.pid != 0 && (p.contexts[i] > 0 || p.used_bytes[i] > 0)) {
      out->push_back({static_cast<unsigned>(p.pid), p.used_bytes[i], p.mig_instance[i]});
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
      if (instances) {  // a process on a MIG device: its instance ids (mig_state.h)
        uint32_t mig = procs[k].mig;
        infos[k].gpuInstanceId = mig != 0 ? static_cast<unsigned>(MigSlotGi(mig)) : kNoInstance;
        infos[k].computeInstanceId = mig != 0 ? static_cast<unsigned>(MigSlotCi(mig)) : kNoInstance;
      }
    }
  }
  return NVML_SUCCESS;
}

// The device time of PID entry k over the `count` periods ending with period `epoch` (those still
// kept while period `current` is in progress), and how many of them were kept.
uint64_t BusyOver(const DeviceState& d, int k, uint64_t epoch, uint64_t count, uint64_t current,
                  uint64_t* kept) {
  uint64_t busy = 0;
  *kept = 0;
  for (uint64_t e = epoch + 1 > count ? epoch + 1 - count : 0; e <= epoch; ++e) {
    if (e + kPidBuckets <= current) continue;  // no longer kept
    busy += PidBusyInBucket(d, k, e);
    ++*kept;
  }
  return busy;
}

// nvml=one: period `epoch` of the device's one phase yields a sample of one process, drawn in
// proportion to the device time each got in the period (the context running at the instant, as
// an H200 shows: each instant has the sample of one process, each process in proportion to its
// share), with smUtil its share of the last second. None when no process ran.
int DrawnAt(const DeviceState& d, int device, uint64_t epoch) {
  uint64_t total = 0;
  for (int k = 0; k < kMaxPidStats; ++k) {
    if (d.pids[k].pid != 0) total += PidBusyInBucket(d, k, epoch);
  }
  if (total == 0) return -1;
  uint64_t draw = Mix(epoch * 31 + static_cast<uint64_t>(device) + kGoldenGamma) % total;
  for (int k = 0; k < kMaxPidStats; ++k) {
    if (d.pids[k].pid == 0) continue;
    uint64_t busy = PidBusyInBucket(d, k, epoch);
    if (draw < busy) return k;
    draw -= busy;
  }
  return -1;
}

// The graphics and MPS lists: no simulated context is a graphics or an MPS client.
nvmlReturn_t NoProcesses(nvmlDevice_t device, unsigned* count) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  uint32_t mig;
  if (nvmlReturn_t r = NvmlResolveAny(device, &s, &i, &mig); r != NVML_SUCCESS) return r;
  *count = 0;
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

#undef nvmlDeviceGetGraphicsRunningProcesses
#undef nvmlDeviceGetMPSComputeRunningProcesses
#define NO_PROCESSES(name, type)                                           \
  nvmlReturn_t name(nvmlDevice_t device, unsigned int* infoCount, type*) { \
    return NoProcesses(device, infoCount);                                 \
  }
NO_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses, nvmlProcessInfo_v1_t)
NO_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v2, nvmlProcessInfo_v2_t)
NO_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlProcessInfo_t)
NO_PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses, nvmlProcessInfo_v1_t)
NO_PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v2, nvmlProcessInfo_v2_t)
NO_PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v3, nvmlProcessInfo_t)
#undef NO_PROCESSES

// The process's command (its first argument, as /proc shows it to the caller: a PID of the
// caller's namespace), as the real library answers it.
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name, unsigned int length) {
  if (NvmlState() == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (name == nullptr || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string command;
  if (!in || !std::getline(in, command, '\0')) return NVML_ERROR_NOT_FOUND;
  return CopyString(command.c_str(), name, length);
}

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

// As the real driver, in one of three ways (SIMGPU_DEVICES nvml=, docs/simgpu.md):
// - one (as an H200 with driver 580 does): every nvml_period_ns (1/6 s) the device
//   takes one sample, of one process (drawn in proportion to the device time each got in the
//   period: the one whose context was running), smUtil being that process's whole percent of the
//   last second; a call returns the newest sample of each process stamped after
//   lastSeenTimeStamp, so a reader sees a history only by polling.
// - own (the default): each process sampled every period on a phase of its own (two processes'
//   stamps never line up), each finished period in which it used the device yielding one
//   sample, smUtil its whole percent of the period; the periods still kept (16 per process) after
//   lastSeenTimeStamp are returned, oldest first.
// - aligned: as own, with every process's periods ending at the same instants.
// Stamps are the period's end (CLOCK_REALTIME us, through the state file's one offset).
// Not in MIG mode (NvmlResolveOutsideMig), as on a real driver.
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount,
                                             unsigned long long lastSeenTimeStamp) {
  if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState* s;
  int i;
  if (nvmlReturn_t r = NvmlResolveOutsideMig(device, &s, &i); r != NVML_SUCCESS) return r;
  std::vector<nvmlProcessUtilizationSample_t> samples;
  {
    SharedState::Lock lock(*s);
    uint64_t now = NowNs();
    int64_t offset_us = s->file().realtime_offset_us;
    DeviceState& d = s->file().devices[i];
    AdvanceDevice(s->file(), i, now);
    uint64_t period = d.nvml_period_ns;
    auto stamp_of = [&](int k, uint64_t epoch) {
      return static_cast<uint64_t>(static_cast<int64_t>(PidPeriodEnd(d, k, epoch) / 1000) +
                                   offset_us);
    };
    if (d.nvml_mode == static_cast<uint32_t>(NvmlMode::kOne)) {
      uint64_t second = (1'000'000'000 + period - 1) / period;  // periods in a second
      // Every PID's phase is 0 here: entry 0's periods are the device's.
      uint64_t current = PidPeriodAt(d, 0, now);
      // The periods still kept (BusyOver's): the oldest one's bucket is being reused.
      uint64_t first = current + 1 > kPidBuckets ? current + 1 - kPidBuckets : 0;
      std::vector<nvmlProcessUtilizationSample_t> newest(kMaxPidStats);
      for (uint64_t epoch = first; epoch < current; ++epoch) {
        int k = DrawnAt(d, i, epoch);
        if (k < 0 || stamp_of(k, epoch) <= lastSeenTimeStamp) continue;
        uint64_t kept = 0;
        uint64_t busy = BusyOver(d, k, epoch, second, current, &kept);
        nvmlProcessUtilizationSample_t& sample = newest[k];
        sample.pid = static_cast<unsigned>(d.pids[k].pid);
        sample.timeStamp = stamp_of(k, epoch);
        sample.smUtil = static_cast<unsigned>(
            std::min<uint64_t>(100, (busy * 100 + kept * period / 2) / (kept * period)));
      }
      for (const nvmlProcessUtilizationSample_t& sample : newest) {
        if (sample.pid != 0) samples.push_back(sample);
      }
    } else {
      for (int k = 0; k < kMaxPidStats; ++k) {
        if (d.pids[k].pid == 0) continue;
        uint64_t current = PidPeriodAt(d, k, now);  // in progress: not sampled yet
        uint64_t first = current > kPidBuckets ? current - kPidBuckets : 0;
        for (uint64_t epoch = first; epoch < current; ++epoch) {
          uint64_t stamp = stamp_of(k, epoch);
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
