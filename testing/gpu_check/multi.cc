// The modes with two load processes (timeslice, nvml) and the load process itself (worker).
// The parent never initialises CUDA (it forks); each worker opens the device, takes clock probes,
// says "ready <pid>", waits for "go" on stdin, runs its load and writes its WorkerOutput.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "child.h"
#include "load.h"
#include "mode_support.h"
#include "modes.h"
#include "worker_output.h"

namespace tessera::gpu_check {

namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kS = 1000 * kMs;

Check& AddSummary(Check& c, const std::string& prefix, const Summary& s) {
  return c.Add(prefix + "_min", s.min)
      .Add(prefix + "_p50", s.p50)
      .Add(prefix + "_p90", s.p90)
      .Add(prefix + "_max", s.max);
}

struct WorkerSpec {
  double kernel_us;
  double duty;
  double seconds;
};

// Two workers started, both ready.
struct Pair {
  std::vector<Child> children;
};

Result<Pair> StartWorkers(const Options& o, const std::vector<WorkerSpec>& specs) {
  Pair p;
  for (const WorkerSpec& s : specs) {
    ASSIGN_OR_RETURN(
        Child c,
        Child::StartSelf({"worker", "--device", std::to_string(o.device), "--libcuda", o.libcuda,
                          "--kernel-us", std::to_string(s.kernel_us), "--duty",
                          std::to_string(s.duty), "--seconds", std::to_string(s.seconds)}));
    p.children.push_back(std::move(c));
  }
  // Context creation can take seconds on a GPU without persistence mode.
  int64_t deadline = MonotonicNs() + 120 * kS;
  for (Child& c : p.children) RETURN_IF_ERROR(c.WaitForLine("ready", deadline));
  return p;
}

Result<std::vector<WorkerOutput>> Finish(Pair& p, double seconds) {
  std::vector<Child*> all;
  for (Child& c : p.children) all.push_back(&c);
  RETURN_IF_ERROR(
      Child::ReadAllAndWait(all, MonotonicNs() + static_cast<int64_t>(seconds * kS) + 120 * kS));
  std::vector<WorkerOutput> out;
  for (Child& c : p.children) {
    Result<WorkerOutput> w = ParseWorkerOutput(c.output());
    if (!w.ok() || c.exit_status() != 0) {
      return Internal("worker " + std::to_string(c.pid()) + " exited with " +
                      std::to_string(c.exit_status()) +
                      (w.ok() ? std::string() : ": " + w.status().message()));
    }
    out.push_back(std::move(*w));
  }
  return out;
}

// Both workers of `specs` from "go" to the end.
Result<std::vector<WorkerOutput>> RunPair(const Options& o, const std::vector<WorkerSpec>& specs) {
  ASSIGN_OR_RETURN(Pair p, StartWorkers(o, specs));
  for (Child& c : p.children) RETURN_IF_ERROR(c.WriteLine("go"));
  return Finish(p, specs[0].seconds);
}

Status Timeslice(const Options& o, Reporter& r) {
  double seconds = o.seconds > 0 ? o.seconds : 2;
  // Short kernels: the runs of each process's kernels are its slices.
  constexpr double kShortUs = 50;
  ASSIGN_OR_RETURN(std::vector<WorkerOutput> w,
                   RunPair(o, {{kShortUs, 1, seconds}, {kShortUs, 1, seconds}}));
  // On the time the kernels ran: a preempted kernel's span holds the other's slice.
  SliceEstimate e =
      EstimateSlices(Running(w[0].intervals, w[0].gaps), Running(w[1].intervals, w[1].gaps), 2000);
  size_t preempted =
      CountPreempted(w[0].intervals, w[0].gaps) + CountPreempted(w[1].intervals, w[1].gaps);
  std::vector<double> both;
  for (const Run& run : e.runs)
    both.push_back(static_cast<double>(run.end_ns - run.start_ns) / 1e6);
  Summary slices = Summarize(both);
  // Kernels that wrote no stamps leave nothing to trust: a failure, whatever the figures.
  Check c("timeslice.slice", w[0].missing + w[1].missing > 0 ? Verdict::kFail : Verdict::kInfo);
  c.Add("kernel_us", kShortUs).Add("runs", e.runs.size());
  AddSummary(c, "slice_ms", slices);
  c.Add("slice_ms_p50_a", e.slice_ms[0].p50).Add("slice_ms_p50_b", e.slice_ms[1].p50);
  AddSummary(c, "gap_us", e.gap_us);
  c.Add("preempted_kernels", preempted)
      .Add("overlap_fraction", e.overlap_fraction)
      .Add("kernels", w[0].intervals.size() + w[1].intervals.size())
      .Add("missing", w[0].missing + w[1].missing);
  if (e.overlap_fraction > 0.5) {
    c.Add("reading", "the processes' kernels ran at once (MPS?): no time slices");
  } else if (e.runs.size() < 3) {
    c.Add("reading", "no switches: one process had the device at a time, without turns");
  } else {
    c.Add("uncertainty", "runs of the time the kernels ran: a gap shorter than 10 us is not seen");
  }
  r.Emit(c);

  // Kernels longer than any slice: preempted, their spans hold the other process's slices.
  constexpr double kLongUs = 20000;
  ASSIGN_OR_RETURN(std::vector<WorkerOutput> l,
                   RunPair(o, {{kLongUs, 1, seconds}, {kLongUs, 1, seconds}}));
  SliceEstimate le =
      EstimateSlices(Running(l[0].intervals, l[0].gaps), Running(l[1].intervals, l[1].gaps), 2000);
  size_t kernels = l[0].intervals.size() + l[1].intervals.size();
  size_t long_preempted =
      CountPreempted(l[0].intervals, l[0].gaps) + CountPreempted(l[1].intervals, l[1].gaps);
  r.Emit(Check("timeslice.preemption",
               l[0].missing + l[1].missing > 0 ? Verdict::kFail : Verdict::kInfo)
             .Add("kernel_us", kLongUs)
             .Add("kernels", kernels)
             .Add("preempted_kernels", long_preempted)
             .Add("overlap_fraction", le.overlap_fraction)
             .Add("missing", l[0].missing + l[1].missing)
             .Add("reading", long_preempted > 0
                                 ? "kernels longer than a slice are preempted"
                                 : "no overlap: each kernel ran to its end (no preemption seen)"));
  return Status::Ok();
}

// NVML's samples of `pids`, polled (lastSeenTimeStamp 0: whatever NVML still holds).
Result<std::vector<NvmlSample>> PollSamples(const Nvml& nvml, nvmlDevice_t device,
                                            const std::vector<uint32_t>& pids) {
  std::vector<NvmlSample> out;
  for (int attempt = 0; attempt < 3; ++attempt) {
    unsigned n = 0;
    nvmlReturn_t rc = nvml.nvmlDeviceGetProcessUtilization(device, nullptr, &n, 0);
    if (rc == NVML_ERROR_NOT_FOUND || (rc == NVML_SUCCESS && n == 0)) return out;
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE && rc != NVML_SUCCESS) {
      return Internal(std::string("nvmlDeviceGetProcessUtilization: ") + nvml.nvmlErrorString(rc));
    }
    n += 64;
    std::vector<nvmlProcessUtilizationSample_t> raw(n);
    rc = nvml.nvmlDeviceGetProcessUtilization(device, raw.data(), &n, 0);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) continue;
    if (rc == NVML_ERROR_NOT_FOUND) return out;
    if (rc != NVML_SUCCESS) {
      return Internal(std::string("nvmlDeviceGetProcessUtilization: ") + nvml.nvmlErrorString(rc));
    }
    for (unsigned k = 0; k < n && k < raw.size(); ++k) {
      if (std::find(pids.begin(), pids.end(), raw[k].pid) == pids.end()) continue;
      out.push_back({raw[k].pid, raw[k].timeStamp, raw[k].smUtil});
    }
    return out;
  }
  return out;
}

Status NvmlBody(const Options& o, const Nvml& nvml, Reporter& r) {
  double seconds = o.seconds > 0 ? o.seconds : 6;
  double tolerance = o.tolerance.value_or(5);
  nvmlReturn_t rc = nvml.nvmlInit_v2();
  if (rc != NVML_SUCCESS) return Internal(std::string("nvmlInit: ") + nvml.nvmlErrorString(rc));
  nvmlDevice_t device = nullptr;
  rc = nvml.nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned>(o.device), &device);
  if (rc != NVML_SUCCESS) {
    return Internal(std::string("nvmlDeviceGetHandleByIndex: ") + nvml.nvmlErrorString(rc));
  }

  // Two processes of known duty: 2 ms spin kernels, 30% and 60% of the time.
  constexpr double kKernelUs = 2000;
  const double duty[2] = {0.3, 0.6};
  ASSIGN_OR_RETURN(Pair p,
                   StartWorkers(o, {{kKernelUs, duty[0], seconds}, {kKernelUs, duty[1], seconds}}));
  std::vector<uint32_t> pids = {static_cast<uint32_t>(p.children[0].pid()),
                                static_cast<uint32_t>(p.children[1].pid())};
  int64_t real_minus_mono = RealtimeNs() - MonotonicNs();
  for (Child& c : p.children) RETURN_IF_ERROR(c.WriteLine("go"));
  int64_t go = RealtimeNs();
  int64_t end = go + static_cast<int64_t>(seconds * kS);

  // Poll every 20 ms until a second after the run; note how far each poll's newest sample lies
  // behind CLOCK_REALTIME and CLOCK_MONOTONIC, to tell which clock NVML stamps with.
  std::vector<NvmlSample> all;
  std::vector<double> lag_real_ms, lag_mono_ms;
  while (RealtimeNs() < end + kS) {
    ASSIGN_OR_RETURN(std::vector<NvmlSample> got, PollSamples(nvml, device, pids));
    int64_t real_us = RealtimeNs() / 1000, mono_us = MonotonicNs() / 1000;
    uint64_t newest = 0;
    for (const NvmlSample& s : got) newest = std::max(newest, s.ts_us);
    if (newest > 0) {
      lag_real_ms.push_back(static_cast<double>(real_us - static_cast<int64_t>(newest)) / 1e3);
      lag_mono_ms.push_back(static_cast<double>(mono_us - static_cast<int64_t>(newest)) / 1e3);
    }
    all.insert(all.end(), got.begin(), got.end());
    SleepNs(20 * kMs);
  }
  ASSIGN_OR_RETURN(std::vector<WorkerOutput> w, Finish(p, 0));
  std::vector<NvmlSample> samples = Dedupe(all);

  Summary lag_real = Summarize(lag_real_ms), lag_mono = Summarize(lag_mono_ms);
  bool monotonic = lag_mono.count > 0 && std::fabs(lag_mono.p50) < std::fabs(lag_real.p50);
  // Host times of the truth on NVML's clock.
  int64_t shift = monotonic ? -real_minus_mono : 0;
  r.Emit(Check("nvml.clock", Verdict::kInfo)
             .Add("clock", lag_real.count == 0 ? "unknown (no samples)"
                           : monotonic         ? "CLOCK_MONOTONIC"
                                               : "CLOCK_REALTIME")
             .Add("newest_sample_lag_ms_p50", monotonic ? lag_mono.p50 : lag_real.p50)
             .Add("polls_with_samples", lag_real.count)
             .Add("samples", samples.size()));

  std::vector<Interval> host[2];
  for (int k = 0; k < 2; ++k) {
    ClockMap map(EstimateOffset(w[k].before), EstimateOffset(w[k].after));
    if (!map.valid()) return Internal("a worker's clock probes came back without stamps");
    for (const Interval& i : Running(w[k].intervals, w[k].gaps)) {
      Interval h = map.ToHost(i);
      host[k].push_back({h.start_ns + shift, h.end_ns + shift});
    }
  }
  Interval window{go + shift, end + kS + shift};
  const char* label[2] = {"a", "b"};
  for (int k = 0; k < 2; ++k) {
    Summary spacing = StampSpacingMs(samples, pids[k]);
    Check sc(std::string("nvml.spacing.") + label[k], Verdict::kInfo);
    size_t count = std::count_if(samples.begin(), samples.end(),
                                 [&](const NvmlSample& s) { return s.pid == pids[k]; });
    sc.Add("pid", static_cast<int64_t>(pids[k])).Add("samples", count);
    r.Emit(AddSummary(sc, "spacing_ms", spacing));

    NvmlVsTruth since = CompareWithTruth(samples, pids[k], host[k], host[1 - k], window, 0);
    bool enough = since.periods >= 2;
    bool pass =
        enough && w[k].missing == 0 && Within(since.nvml_percent, since.truth_percent, tolerance);
    Check c(std::string("nvml.sm_util.") + label[k], pass ? Verdict::kPass : Verdict::kFail);
    c.Add("duty_percent", 100 * duty[k])
        .Add("nvml_percent", since.nvml_percent)
        .Add("truth_percent", since.truth_percent)
        .Add("tolerance", tolerance)
        .Add("periods", since.periods)
        .Add("covered_s", since.covered_s)
        .Add("abs_error_p50", since.abs_error_points.p50)
        .Add("abs_error_p90", since.abs_error_points.p90)
        .Add("kernels", w[k].intervals.size())
        .Add("missing", w[k].missing);
    if (!enough) {
      c.Add("reading",
            "fewer than 2 NVML periods of this PID (NVML names host PIDs: a PID "
            "namespace hides them)");
    }
    r.Emit(c);

    // Which period a sample covers: since the PID's previous sample, or a fixed 1/6 s or 1 s.
    NvmlVsTruth sixth = CompareWithTruth(samples, pids[k], host[k], host[1 - k], window, 166667);
    NvmlVsTruth second = CompareWithTruth(samples, pids[k], host[k], host[1 - k], window, 1000000);
    r.Emit(Check(std::string("nvml.period.") + label[k], Verdict::kInfo)
               .Add("abs_error_p50_since_previous", since.abs_error_points.p50)
               .Add("abs_error_p50_last_166ms", sixth.abs_error_points.p50)
               .Add("abs_error_p50_last_1s", second.abs_error_points.p50)
               .Add("periods", sixth.periods));

    // Every sample, to model NVML from: "<ms after go>:<smUtil>:<truth since the previous one>".
    std::string listed;
    uint64_t previous_us = 0;
    for (const NvmlSample& s : samples) {
      if (s.pid != pids[k]) continue;
      int64_t at_ns = static_cast<int64_t>(s.ts_us) * 1000;
      double truth = previous_us == 0 ? -1
                                      : ShareOf(host[k], host[1 - k],
                                                {static_cast<int64_t>(previous_us) * 1000, at_ns})
                                            .percent;
      char item[64];
      std::snprintf(item, sizeof(item), "%s%.0f:%u:%.1f", listed.empty() ? "" : " ",
                    static_cast<double>(at_ns - window.start_ns) / 1e6, s.sm_util, truth);
      listed += item;
      previous_us = s.ts_us;
    }
    r.Emit(Check(std::string("nvml.samples.") + label[k], Verdict::kInfo).Add("samples", listed));
  }
  Summary align = AlignmentMs(samples, pids[0], pids[1]);
  Check ac("nvml.alignment", Verdict::kInfo);
  AddSummary(ac, "distance_ms", align);
  ac.Add("reading", align.count == 0  ? "no samples to compare"
                    : align.p50 < 1.0 ? "the PIDs are sampled at shared instants"
                                      : "each PID has instants of its own");
  r.Emit(ac);
  nvml.nvmlShutdown();
  return Status::Ok();
}

}  // namespace

int RunWorker(const Options& o) {
  const Cuda* cuda = LoadCudaOrExplain(o.libcuda);
  if (cuda == nullptr) return kCannotRun;
  double kernel_us = o.kernel_us > 0 ? o.kernel_us : 50;
  double seconds = o.seconds > 0 ? o.seconds : 2;
  double launches = seconds * 1e6 / kernel_us * o.duty * 1.5 + 4096;
  // A launch's record is 128 bytes: 2M of them are 256 MiB of device (and host) memory.
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "gpu_check worker %d: %s\n", static_cast<int>(getpid()),
                 s.message().c_str());
    return 1;
  };
  Result<std::unique_ptr<Device>> opened =
      Device::Open(*cuda, o.device, static_cast<size_t>(std::min(launches, double{1 << 21})));
  if (!opened.ok()) return fail(opened.status());
  Device& d = **opened;
  Kernel k = Kernel::Spin(static_cast<uint64_t>(kernel_us * 1000));
  CUstream stream = nullptr;
  if (CUresult rc = cuda->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING); rc != CUDA_SUCCESS) {
    return fail(CudaStatus(*cuda, rc, "cuStreamCreate"));
  }
  // Warm: the first launches of a function cost more.
  if (Status s = LaunchMany(d, stream, k, 2, -1); !s.ok()) return fail(s);
  if (CUresult rc = cuda->cuStreamSynchronize(stream); rc != CUDA_SUCCESS) {
    return fail(CudaStatus(*cuda, rc, "cuStreamSynchronize"));
  }
  Result<std::vector<ClockProbe>> before = d.Probes(5);
  if (!before.ok()) return fail(before.status());
  std::printf("ready %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  char line[64] = {};
  if (std::fgets(line, sizeof(line), stdin) == nullptr || std::strncmp(line, "go", 2) != 0) {
    return fail(FailedPrecondition("no \"go\" on stdin"));
  }
  int64_t end = RealtimeNs() + static_cast<int64_t>(seconds * kS);
  Status run =
      o.duty >= 1 ? RunBusy(d, {stream}, {k}, 16, end) : RunDuty(d, stream, k, o.duty, end);
  if (!run.ok()) return fail(run);
  Result<std::vector<ClockProbe>> after = d.Probes(5);
  if (!after.ok()) return fail(after.status());
  if (Status s = d.ReadStamps(); !s.ok()) return fail(s);
  WorkerOutput w;
  w.pid = getpid();
  w.before = *before;
  w.after = *after;
  w.intervals = d.Intervals(0, &w.missing);
  w.gaps = d.Gaps(0);
  std::fputs(FormatWorkerOutput(w).c_str(), stdout);
  std::fflush(stdout);
  return 0;
}

int RunTimeslice(const Options& o, Reporter& r) {
  // Only to say early and clearly when there is no driver; the workers load their own.
  if (LoadCudaOrExplain(o.libcuda) == nullptr) return kCannotRun;
  Status s = Timeslice(o, r);
  return s.ok() ? ExitStatus(r) : FailWith(r, o.mode, s);
}

int RunNvml(const Options& o, Reporter& r) {
  if (LoadCudaOrExplain(o.libcuda) == nullptr) return kCannotRun;
  const Nvml* nvml = LoadNvmlOrExplain(o.libnvml);
  if (nvml == nullptr) return kCannotRun;
  Status s = NvmlBody(o, *nvml, r);
  return s.ok() ? ExitStatus(r) : FailWith(r, o.mode, s);
}

}  // namespace tessera::gpu_check
