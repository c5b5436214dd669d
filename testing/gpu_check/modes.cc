// The single-process modes: events, spread, streams, share, memory.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "load.h"
#include "mode_support.h"
#include "modes.h"
#include "worker_output.h"

namespace tessera::gpu_check {

namespace {

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;
constexpr int64_t kS = 1000 * kMs;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

Check& AddSummary(Check& c, const std::string& prefix, const Summary& s) {
  return c.Add(prefix + "_min", s.min)
      .Add(prefix + "_mean", s.mean)
      .Add(prefix + "_p50", s.p50)
      .Add(prefix + "_p90", s.p90)
      .Add(prefix + "_max", s.max);
}

// Runs `body` with the driver loaded and a device open; the exit status.
template <typename Body>
int WithDevice(const Options& o, Reporter& r, size_t capacity, Body body) {
  const Cuda* cuda = LoadCudaOrExplain(o.libcuda);
  if (cuda == nullptr) return kCannotRun;
  // A named share run's error carries its name: the script runs several.
  std::string prefix = o.mode == "share" && !o.name.empty() ? o.name : o.mode;
  Result<std::unique_ptr<Device>> d = Device::Open(*cuda, o.device, capacity);
  if (!d.ok()) return FailWith(r, prefix, d.status());
  Status s = body(**d);
  if (!s.ok()) return FailWith(r, prefix, s);
  return ExitStatus(r);
}

Result<CUstream> NewStream(const Cuda& cuda) {
  CUstream s = nullptr;
  CU_RETURN_IF_ERROR(cuda, cuda.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  return s;
}

Result<double> ElapsedNs(const Cuda& cuda, CUevent from, CUevent to) {
  float ms = 0;
  CU_RETURN_IF_ERROR(cuda, cuda.cuEventElapsedTime(&ms, from, to));
  return static_cast<double>(ms) * 1e6;
}

// event span - stamp span, in microseconds, of the pairs (event pair, launch index).
struct Span {
  CUevent from, to;
  size_t launch;
};
Result<Summary> BiasUs(Device& d, const std::vector<Span>& spans) {
  std::vector<double> bias;
  for (const Span& s : spans) {
    ASSIGN_OR_RETURN(double event_ns, ElapsedNs(d.cuda(), s.from, s.to));
    std::optional<Interval> stamp = d.IntervalAt(s.launch);
    if (!stamp) return Internal("a spin kernel wrote no stamps");
    bias.push_back((event_ns - static_cast<double>(stamp->length())) / 1e3);
  }
  return Summarize(bias);
}

Status Events(Device& d, Reporter& r) {
  const Cuda& cuda = d.cuda();
  ASSIGN_OR_RETURN(CUstream stream, NewStream(cuda));
  auto event = [&]() -> Result<CUevent> {
    CUevent e = nullptr;
    CU_RETURN_IF_ERROR(cuda, cuda.cuEventCreate(&e, CU_EVENT_DEFAULT));
    return e;
  };
  const Kernel spin = Kernel::Spin(100 * kUs);

  // Cost of the calls themselves, on the host.
  ASSIGN_OR_RETURN(CUevent e0, event());
  ASSIGN_OR_RETURN(CUevent e1, event());
  constexpr int kCalls = 2000;
  int64_t t0 = MonotonicNs();
  for (int k = 0; k < kCalls; ++k) CU_RETURN_IF_ERROR(cuda, cuda.cuEventRecord(e0, stream));
  double record_ns = static_cast<double>(MonotonicNs() - t0) / kCalls;
  CU_RETURN_IF_ERROR(cuda, cuda.cuEventRecord(e0, stream));
  RETURN_IF_ERROR(d.Launch(stream, Kernel::Spin(10 * kUs), 0));
  CU_RETURN_IF_ERROR(cuda, cuda.cuEventRecord(e1, stream));
  CU_RETURN_IF_ERROR(cuda, cuda.cuEventSynchronize(e1));
  float ms = 0;
  t0 = MonotonicNs();
  for (int k = 0; k < kCalls; ++k) {
    CU_RETURN_IF_ERROR(cuda, cuda.cuEventElapsedTime(&ms, e0, e1));
  }
  double elapsed_ns = static_cast<double>(MonotonicNs() - t0) / kCalls;
  r.Emit(Check("events.cost", Verdict::kInfo)
             .Add("record_ns", record_ns)
             .Add("elapsed_time_ns", elapsed_ns));

  // Spans on a busy stream: 200 pairs queued behind each other.
  constexpr int kBusy = 200;
  std::vector<Span> busy;
  RETURN_IF_ERROR(LaunchMany(d, stream, spin, 2, 1));  // the stream is busy from the start
  for (int k = 0; k < kBusy; ++k) {
    ASSIGN_OR_RETURN(CUevent from, event());
    ASSIGN_OR_RETURN(CUevent to, event());
    CU_RETURN_IF_ERROR(cuda, cuda.cuEventRecord(from, stream));
    busy.push_back({from, to, d.launches()});
    RETURN_IF_ERROR(d.Launch(stream, spin, 0));
    CU_RETURN_IF_ERROR(cuda, cuda.cuEventRecord(to, stream));
  }
  RETURN_IF_ERROR(d.ReadStamps());
  ASSIGN_OR_RETURN(Summary busy_bias, BiasUs(d, busy));
  Check c("events.bias.busy_stream", Verdict::kInfo);
  c.Add("kernel_us", 100).Add("spans", busy_bias.count);
  r.Emit(AddSummary(c, "bias_us", busy_bias));
  for (const Span& s : busy) {
    CU_RETURN_IF_ERROR(cuda, cuda.cuEventDestroy_v2(s.from));
    CU_RETURN_IF_ERROR(cuda, cuda.cuEventDestroy_v2(s.to));
  }

  // Spans on an idle stream: record, launch, record, wait; and the same with the host 1 ms late
  // between the first record and the launch (deferred submission: the first event may run only
  // when the launch follows, so the span leaves the 1 ms out).
  for (int deferred = 0; deferred < 2; ++deferred) {
    constexpr int kIdle = 50;
    std::vector<double> bias;
    for (int k = 0; k < kIdle; ++k) {
      CU_RETURN_IF_ERROR(cuda, cuda.cuStreamSynchronize(stream));
      CU_RETURN_IF_ERROR(cuda, cuda.cuEventRecord(e0, stream));
      if (deferred) SleepNs(kMs);
      size_t launch = d.launches();
      RETURN_IF_ERROR(d.Launch(stream, spin, 0));
      CU_RETURN_IF_ERROR(cuda, cuda.cuEventRecord(e1, stream));
      CU_RETURN_IF_ERROR(cuda, cuda.cuEventSynchronize(e1));
      RETURN_IF_ERROR(d.ReadStamps());
      ASSIGN_OR_RETURN(Summary one, BiasUs(d, {{e0, e1, launch}}));
      bias.push_back(one.mean);
    }
    Summary s = Summarize(bias);
    Check idle(deferred ? "events.bias.host_1ms_late" : "events.bias.idle_stream", Verdict::kInfo);
    idle.Add("kernel_us", 100).Add("spans", s.count);
    AddSummary(idle, "bias_us", s);
    if (deferred) {
      size_t left_out = 0;
      for (double b : bias) left_out += b < 500 ? 1 : 0;
      idle.Add("spans_without_the_1ms", left_out)
          .Add("reading", left_out * 2 > bias.size() ? "deferred: the event ran with the launch"
                                                     : "not deferred: the span holds the 1 ms");
    }
    r.Emit(idle);
  }
  return Status::Ok();
}

Status Spread(Device& d, Reporter& r) {
  ASSIGN_OR_RETURN(CUstream stream, NewStream(d.cuda()));
  ASSIGN_OR_RETURN(uint64_t iterations, d.ArithIterationsFor(200));
  // Back to back (tag 0), then one at a time with 2 ms idle between (tag 1): clocks may drop.
  RETURN_IF_ERROR(LaunchMany(d, stream, Kernel::Arith(iterations), 500, 0));
  CU_RETURN_IF_ERROR(d.cuda(), d.cuda().cuStreamSynchronize(stream));
  for (int k = 0; k < 100; ++k) {
    RETURN_IF_ERROR(d.Launch(stream, Kernel::Arith(iterations), 1));
    CU_RETURN_IF_ERROR(d.cuda(), d.cuda().cuStreamSynchronize(stream));
    SleepNs(2 * kMs);
  }
  RETURN_IF_ERROR(d.ReadStamps());
  for (int tag = 0; tag < 2; ++tag) {
    size_t missing = 0;
    Summary s = Summarize(Durations(d.Intervals(tag, &missing), 1e3));
    Check c(tag == 0 ? "spread.back_to_back" : "spread.idle_between",
            missing > 0 ? Verdict::kFail : Verdict::kInfo);
    c.Add("iterations", static_cast<int64_t>(iterations)).Add("spans", s.count);
    AddSummary(c, "span_us", s);
    c.Add("mean_over_min", s.min > 0 ? s.mean / s.min : 0)
        .Add("p90_over_min", s.min > 0 ? s.p90 / s.min : 0)
        .Add("missing", missing);
    r.Emit(c);
  }
  return Status::Ok();
}

Status Streams(Device& d, Reporter& r) {
  ASSIGN_OR_RETURN(CUstream s0, NewStream(d.cuda()));
  ASSIGN_OR_RETURN(CUstream s1, NewStream(d.cuda()));
  for (int k = 0; k < 100; ++k) {
    RETURN_IF_ERROR(d.Launch(s0, Kernel::Spin(kMs), 0));
    RETURN_IF_ERROR(d.Launch(s1, Kernel::Spin(kMs), 1));
  }
  RETURN_IF_ERROR(d.ReadStamps());
  size_t missing0 = 0, missing1 = 0;
  std::vector<Interval> a = d.Intervals(0, &missing0), b = d.Intervals(1, &missing1);
  std::vector<Interval> both = a;
  both.insert(both.end(), b.begin(), b.end());
  int64_t busy = Length(Union(both));
  double spans = 0;
  for (double v : Durations(both, 1)) spans += v;
  r.Emit(Check("streams.overlap", missing0 + missing1 > 0 ? Verdict::kFail : Verdict::kInfo)
             .Add("kernel_us", 1000)
             .Add("kernels_per_stream", 100)
             .Add("overlap_fraction", OverlapFraction(a, b))
             .Add("busy_ms", busy / 1e6)
             .Add("spans_ms", spans / 1e6)
             .Add("spans_over_busy", busy > 0 ? spans / static_cast<double>(busy) : 0)
             .Add("missing", missing0 + missing1));
  return Status::Ok();
}

// Waits up to `wait_ns` for `path` to exist, then reads it whole.
Result<std::string> ReadWhenThere(const std::string& path, int64_t wait_ns) {
  int64_t until = MonotonicNs() + wait_ns;
  while (access(path.c_str(), R_OK) != 0) {
    if (MonotonicNs() > until) {
      return NotFound(path + " did not appear (did the neighbour run with --intervals-out?)");
    }
    SleepNs(50 * kMs);
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return ErrnoStatus("read", path, errno);
  return text.str();
}

Status WriteAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return ErrnoStatus("write", tmp, errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoStatus("rename", tmp, errno);
  return Status::Ok();
}

Status ShareBody(const Options& o, Device& d, Reporter& r) {
  const Cuda& cuda = d.cuda();
  double seconds = o.seconds > 0 ? o.seconds : 5;
  double tolerance = o.tolerance.value_or(3);
  double kernel_us = o.kernel_us > 0 ? o.kernel_us : 200;
  std::vector<CUstream> streams;
  for (int k = 0; k < o.streams; ++k) {
    ASSIGN_OR_RETURN(CUstream s, NewStream(cuda));
    streams.push_back(s);
  }
  std::vector<Kernel> cycle;
  if (o.variable) {
    ASSIGN_OR_RETURN(uint64_t arith_100us, d.ArithIterationsFor(100));
    cycle = {Kernel::Spin(50 * kUs), Kernel::Arith(arith_100us), Kernel::Spin(200 * kUs),
             Kernel::Arith(4 * arith_100us), Kernel::Spin(800 * kUs)};
  } else {
    cycle = {Kernel::Spin(static_cast<uint64_t>(kernel_us * kUs))};
  }
  ASSIGN_OR_RETURN(std::vector<ClockProbe> before, d.Probes(5));
  if (!o.ready_file.empty()) RETURN_IF_ERROR(WriteAtomically(o.ready_file, "running\n"));
  int64_t start = RealtimeNs();
  Interval window{start + static_cast<int64_t>(o.warmup * kS),
                  start + static_cast<int64_t>((o.warmup + seconds) * kS)};
  RETURN_IF_ERROR(RunBusy(d, streams, cycle, 8, window.end_ns));
  ASSIGN_OR_RETURN(std::vector<ClockProbe> after, d.Probes(5));
  RETURN_IF_ERROR(d.ReadStamps());

  WorkerOutput own;
  own.pid = getpid();
  own.before = before;
  own.after = after;
  own.intervals = d.Intervals(Device::kAnyLoad, &own.missing);
  own.gaps = d.Gaps(Device::kAnyLoad);
  if (!o.intervals_out.empty()) {
    RETURN_IF_ERROR(WriteAtomically(o.intervals_out, FormatWorkerOutput(own)));
  }
  ClockOffset offset_before = EstimateOffset(before), offset_after = EstimateOffset(after);
  ClockMap map(offset_before, offset_after);
  if (!map.valid()) return Internal("no clock probe came back with a stamp");
  // The truth is the time the kernels ran, not their spans: a span preempted for the
  // neighbour's slice holds the neighbour's time.
  std::vector<Interval> own_host, others_host, own_spans_host, own_gaps_host, others_gaps_host;
  for (const Interval& i : Running(own.intervals, own.gaps)) own_host.push_back(map.ToHost(i));
  for (const Interval& i : own.intervals) own_spans_host.push_back(map.ToHost(i));
  for (const Interval& g : own.gaps) own_gaps_host.push_back(map.ToHost(g));
  size_t neighbour_kernels = 0;
  if (!o.neighbour_intervals.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadWhenThere(o.neighbour_intervals, 60 * kS));
    Result<WorkerOutput> n = ParseWorkerOutput(text);
    if (!n.ok()) return n.status().WithContext(o.neighbour_intervals);
    // The same device, so the same %globaltimer: this process's clock map serves.
    for (const Interval& i : Running(n->intervals, n->gaps)) others_host.push_back(map.ToHost(i));
    for (const Interval& g : n->gaps) others_gaps_host.push_back(map.ToHost(g));
    neighbour_kernels = n->intervals.size();
  }
  Share share = ShareOf(own_host, others_host, window);
  double spans_in_window = 0;
  size_t in_window = 0;
  for (const Interval& i : own_spans_host) {
    if (i.start_ns < window.start_ns || i.end_ns > window.end_ns) continue;
    spans_in_window += static_cast<double>(i.length());
    ++in_window;
  }
  int64_t preempted_ns = Length(Clip(Union(own_gaps_host), window));
  // Beside a neighbour, what switching between the two contexts cost the device: the limit is
  // held to what the neighbour and the switching left (WithinBeside).
  std::vector<Interval> both_running = own_host, both_gaps = own_gaps_host;
  both_running.insert(both_running.end(), others_host.begin(), others_host.end());
  both_gaps.insert(both_gaps.end(), others_gaps_host.begin(), others_gaps_host.end());
  const double window_ns = static_cast<double>(window.length());
  const double switched_percent =
      window_ns > 0
          ? 100.0 * static_cast<double>(SwitchedNs(both_running, both_gaps, window)) / window_ns
          : 0;
  const double neighbour_percent = ShareOf(others_host, {}, window).percent;

  Verdict v = Verdict::kInfo;
  if (o.expect) {
    bool ok = o.neighbour_intervals.empty() ? Within(share.percent, *o.expect, tolerance)
                                            : WithinBeside(share.percent, *o.expect, tolerance,
                                                           neighbour_percent, switched_percent);
    v = ok ? Verdict::kPass : Verdict::kFail;
  }
  if (o.at_least) v = share.percent >= *o.at_least ? Verdict::kPass : Verdict::kFail;
  if (own.missing > 0) v = Verdict::kFail;  // kernels that did not stamp: nothing to trust
  Check c(o.name.empty() ? "share" : o.name, v);
  c.Add("share_percent", share.percent);
  if (o.expect) c.Add("expect", *o.expect).Add("tolerance", tolerance);
  if (o.at_least) c.Add("at_least", *o.at_least);
  c.Add("busy_ms", share.busy_ns / 1e6)
      .Add("window_s", share.window_ns / 1e9)
      .Add("neighbour_time_excluded_ms", share.excluded_ns / 1e6)
      .Add("kernels", own.intervals.size())
      .Add("kernels_in_window", in_window)
      .Add("mean_kernel_us", in_window > 0 ? spans_in_window / in_window / 1e3 : 0)
      .Add("spans_over_busy", share.busy_ns > 0 ? spans_in_window / share.busy_ns : 0)
      .Add("preempted_kernels", CountPreempted(own.intervals, own.gaps))
      .Add("preempted_ms", preempted_ns / 1e6)
      .Add("streams", o.streams)
      .Add("kernels_mix", o.variable ? "variable" : "spin")
      .Add("neighbour_kernels", neighbour_kernels)
      .Add("neighbour_share_percent", neighbour_percent)
      .Add("switched_percent", switched_percent)
      .Add("missing", own.missing)
      .Add("clock_uncertainty_us", offset_before.uncertainty_ns / 1e3)
      .Add("clock_drift_ppm", map.drift_ppm());
  r.Emit(c);
  return Status::Ok();
}

Status Memory(const Options& o, Device& d, Reporter& r) {
  const Cuda& cuda = d.cuda();
  uint64_t limit = static_cast<uint64_t>(o.limit_gib * static_cast<double>(kGiB));
  size_t free = 0, total = 0;
  CU_RETURN_IF_ERROR(cuda, cuda.cuMemGetInfo_v2(&free, &total));
  r.Emit(Check("memory.total", total == limit ? Verdict::kPass : Verdict::kFail)
             .Add("total_mib", static_cast<int64_t>(total / kMiB))
             .Add("free_mib", static_cast<int64_t>(free / kMiB))
             .Add("limit_mib", static_cast<int64_t>(limit / kMiB)));

  CUdeviceptr p = 0;
  CUresult rc = cuda.cuMemAlloc_v2(&p, limit + kGiB);
  if (rc == CUDA_SUCCESS) CU_RETURN_IF_ERROR(cuda, cuda.cuMemFree_v2(p));
  r.Emit(
      Check("memory.past_limit", rc == CUDA_ERROR_OUT_OF_MEMORY ? Verdict::kPass : Verdict::kFail)
          .Add("asked_mib", static_cast<int64_t>((limit + kGiB) / kMiB))
          .Add("result", rc == CUDA_SUCCESS ? std::string("allocated") : cuda.Describe(rc)));

  // 256 MiB at a time until refused: all but the context's cost fits, nothing past the limit.
  constexpr uint64_t kChunk = 256 * kMiB;
  std::vector<CUdeviceptr> held;
  uint64_t allocated = 0;
  rc = CUDA_SUCCESS;
  while (held.size() < limit / kChunk + 8) {
    rc = cuda.cuMemAlloc_v2(&p, kChunk);
    if (rc != CUDA_SUCCESS) break;
    held.push_back(p);
    allocated += kChunk;
  }
  for (CUdeviceptr h : held) CU_RETURN_IF_ERROR(cuda, cuda.cuMemFree_v2(h));
  bool ok = rc == CUDA_ERROR_OUT_OF_MEMORY && allocated <= limit && allocated + kGiB >= limit;
  r.Emit(
      Check("memory.fill", ok ? Verdict::kPass : Verdict::kFail)
          .Add("allocated_mib", static_cast<int64_t>(allocated / kMiB))
          .Add("limit_mib", static_cast<int64_t>(limit / kMiB))
          .Add("chunk_mib", static_cast<int64_t>(kChunk / kMiB))
          .Add("stopped_by", rc == CUDA_SUCCESS ? std::string("chunk count") : cuda.Describe(rc))
          .Add("want", "CUDA_ERROR_OUT_OF_MEMORY, at most the limit, at least the limit - 1 GiB"));
  return Status::Ok();
}

}  // namespace

int RunEvents(const Options& o, Reporter& r) {
  return WithDevice(o, r, 4096, [&](Device& d) { return Events(d, r); });
}

int RunSpread(const Options& o, Reporter& r) {
  return WithDevice(o, r, 4096, [&](Device& d) { return Spread(d, r); });
}

int RunStreams(const Options& o, Reporter& r) {
  return WithDevice(o, r, 4096, [&](Device& d) { return Streams(d, r); });
}

int RunShare(const Options& o, Reporter& r) {
  double seconds = (o.seconds > 0 ? o.seconds : 5) + o.warmup + 2;
  double shortest_us = o.variable ? 50 : std::max(o.kernel_us > 0 ? o.kernel_us : 200, 1.0);
  double launches = seconds * 1e6 / shortest_us * o.streams + 8192;
  size_t capacity = static_cast<size_t>(std::min(launches, double{1 << 23}));
  return WithDevice(o, r, capacity, [&](Device& d) { return ShareBody(o, d, r); });
}

int RunMemory(const Options& o, Reporter& r) {
  return WithDevice(o, r, 0, [&](Device& d) { return Memory(o, d, r); });
}

}  // namespace tessera::gpu_check
