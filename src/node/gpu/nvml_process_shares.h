// Achieved compute shares: how much of each GPU's time each host process used recently, from
// NVML's per-process utilisation samples (nvmlDeviceGetProcessUtilization). The metrics exporter
// adds them up per container through each allocation's pids file (src/abi/host_pids.h).
//
// The arithmetic is done by pure functions over samples and `now` (ProcessSharesOf over a
// ShareWindow, and InferSamplePeriodUs, as NVML does not report its period); NvmlProcessShares
// only reads NVML.
// Thread-safety: the pure functions are thread-safe (no state); NvmlProcessShares is thread-safe
// as NVML is, and the library must outlive the call.
//
//   ProcessShares shares = NvmlProcessShares(nvml, gpus);  // at each scrape
//
// What a sample says: docs/node-agent.md, "Metrics"; docs/compute-limit.md, "Reading the
// achieved share".
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "node/gpu/gpu.h"
#include "node/gpu/nvml_library.h"
#include "node/metrics/metrics.h"

namespace tessera::node {

// One NVML sample of one process on one GPU.
struct ProcessSample {
  uint32_t pid = 0;
  uint64_t stamp_us = 0;  // end of the sample period, CPU time in microseconds
  unsigned sm_util = 0;   // whole percent of the period; above 100 counts as 100
};

struct ShareWindow {
  // Samples whose period ended longer ago than this are not used.
  uint64_t window_us = 5'000'000;
  // The range of sample periods of real GPUs (NVML: "between 1 second and 1/6 second depending on
  // the product"); an inferred period is brought into it (InferSamplePeriodUs).
  uint64_t min_period_us = 166'667;
  uint64_t max_period_us = 1'000'000;
  // One process per instant: a process's newest sample stands this long.
  uint64_t instant_stale_us = 2'000'000;
};

// The sample period of one GPU, inferred from its samples (the driver does not report it). Gaps
// between consecutive stamps of one process are whole multiples of the period, one period where
// the process ran in two periods in a row; all processes of a GPU share the period. So: the
// smallest gap of any process, refined as the mean of the gaps shorter than 1.5 times it (these
// are one period each; the mean evens out jitter in the stamps); then, above max_period_us, the
// largest whole fraction of it that is not (a GPU on which every process ran only in isolated
// periods shows a multiple of its period, of which this is the best guess); below min_period_us,
// min_period_us. Without any gap (no process has two samples) it is min_period_us: the guess that
// reads a rarely used GPU's shares low rather than high.
uint64_t InferSamplePeriodUs(const std::vector<ProcessSample>& samples,
                             const ShareWindow& window = {});

// Per PID with samples among `samples` (one GPU's): its share of the GPU's time, in percent (0 to
// 100, not rounded), at `now_us` (the samples' clock). Only samples stamped in (now_us -
// window_us, now_us] count. A process's device time is the sum of its samples' smUtil/100 times
// the period P (InferSamplePeriodUs); it is divided by N periods of P, N being the process's own
// sample periods (its stamps plus and minus whole periods) that ended in the span, so the share
// is the sum of smUtil over N. The span ends now and starts at the window's start when the GPU's
// oldest sample is in the window's first period (the history covers the window), else at that
// oldest sample (the driver's history is shorter, or no process used the GPU before): never 5 s
// for 2.7 s of samples, but a process alone on the GPU that started during the window is measured
// from its first sample on. A period counts once it ended a tenth of a period ago without a sample
// (a sample a little late is not idle time); the period in progress is not seen, so the share
// lags by up to one period.
//
// A driver that samples one process per instant (an H200 with driver 580: each instant of the GPU
// has the sample of the process running then, its smUtil the process's share of about the last
// second) returns each process's newest sample only. So when no process has two samples in the
// window, each sample is read as its process's share of the second before its stamp, and counts
// while it is at most `instant_stale_us` old (a process with a few percent is seldom drawn; one
// that stopped drops out then).
std::map<uint32_t, double> ProcessSharesOf(const std::vector<ProcessSample>& samples,
                                           uint64_t now_us, const ShareWindow& window = {});

// Per GPU of `gpus`: ProcessSharesOf its samples of the last ShareWindow{}.window_us, now being the
// wall clock in microseconds (NVML's stamps). A GPU that no process used in the window maps to an
// empty map; a GPU whose driver does not give per-process utilisation (MIG, some vGPU guests,
// MPS), or that does not answer, is left out.
ProcessShares NvmlProcessShares(const NvmlLibrary& nvml, const std::vector<GpuInfo>& gpus);

}  // namespace tessera::node
