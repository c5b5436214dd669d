#include "options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

#include "common/strings.h"

namespace tessera::gpu_check {

const char kUsage[] = R"(usage: gpu_check MODE [options]

Ground truth on a real NVIDIA GPU: PTX kernels stamp their start and end with %globaltimer, so
every process knows its kernels' exact busy intervals on the device's clock. Needs only the
driver (libcuda.so.1, libnvidia-ml.so.1 for nvml); exits 2 when it is missing.

modes:
  timeslice  two processes loop spin kernels: time-slice length, switch gap, preemption
  nvml       two processes at 30% and 60% duty: NVML per-process samples against the stamps
  events     cost and bias of cuEventRecord/cuEventElapsedTime spans, deferred submission
  spread     min, mean and p90 of many spans of one arith kernel
  streams    two streams of one context: overlap of their kernels
  share      a load for --seconds; its busy share of the window (run under the library)
  memory     under a --limit-gib limit: cuMemGetInfo total, allocations past the limit
  worker     (internal) the load of one timeslice/nvml process

options:
  --out FILE              append one JSON line per check to FILE
  --device N              CUDA device ordinal and NVML index (default 0)
  --seconds S             measured time (defaults: timeslice 2, nvml 6, share 5)
  --libcuda PATH, --libnvml PATH   driver libraries (default libcuda.so.1, libnvidia-ml.so.1)
  --tolerance POINTS      share: against --expect (default 3); nvml: smUtil vs truth (default 5)
share:
  --name NAME             the check's name (default share)
  --expect PERCENT        PASS when the share is within --tolerance of it
  --at-least PERCENT      PASS when the share is at least this
  --warmup S              load run before the window (default 1)
  --variable              spin kernels of 50, 200 and 800 us and arith of about 100 and 400 us
  --streams N             1 or 2 streams (default 1)
  --kernel-us N           spin length without --variable (default 200)
  --intervals-out FILE    write the busy intervals (for a neighbour's --neighbour-intervals)
  --neighbour-intervals FILE  a neighbour's intervals (waits up to 60 s for the file): its
                          busy time is not counted as this process's (time-sliced preemption)
  --ready-file FILE       created once the load runs
memory:
  --limit-gib G           the memory limit given to the library (default 4)
worker:
  --kernel-us N, --duty F spin length and busy fraction (1: back to back)

Each check prints "NAME  PASS|FAIL|INFO  figures"; exit 0 (no FAIL), 1 (a FAIL), 2 (cannot run).
)";

namespace {

const std::vector<std::string> kModes = {"timeslice", "nvml",  "events", "spread",
                                         "streams",   "share", "memory", "worker"};

Result<double> Number(const std::string& flag, const std::string& text, double lo, double hi) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) {
    char range[96];
    std::snprintf(range, sizeof(range), ": want a number from %g to %g", lo, hi);
    return InvalidArgument(flag + " " + text + range);
  }
  return v;
}

}  // namespace

Result<Options> ParseOptions(const std::vector<std::string>& args) {
  Options o;
  if (args.empty()) return InvalidArgument("no mode given");
  o.mode = args[0];
  if (std::find(kModes.begin(), kModes.end(), o.mode) == kModes.end()) {
    std::string message = "unknown mode " + o.mode + " (modes: " + Join(kModes, ", ") + ")";
    if (auto near = ClosestMatch(o.mode, kModes)) message += "; did you mean " + *near + "?";
    return InvalidArgument(message);
  }

  using Setter = std::function<Status(const std::string&, const std::string&)>;
  auto text = [](std::string* field) -> Setter {
    return [field](const std::string& flag, const std::string& v) {
      if (v.empty()) return InvalidArgument(flag + ": empty value");
      *field = v;
      return Status::Ok();
    };
  };
  auto number = [](double* field, double lo, double hi) -> Setter {
    return [=](const std::string& flag, const std::string& v) {
      Result<double> r = Number(flag, v, lo, hi);
      if (!r.ok()) return r.status();
      *field = *r;
      return Status::Ok();
    };
  };
  auto optional_number = [](std::optional<double>* field, double lo, double hi) -> Setter {
    return [=](const std::string& flag, const std::string& v) {
      Result<double> r = Number(flag, v, lo, hi);
      if (!r.ok()) return r.status();
      *field = *r;
      return Status::Ok();
    };
  };
  auto integer = [](int* field, int lo, int hi) -> Setter {
    return [=](const std::string& flag, const std::string& v) {
      Result<double> r = Number(flag, v, lo, hi);
      if (!r.ok()) return r.status();
      if (*r != std::floor(*r)) return InvalidArgument(flag + " " + v + ": want a whole number");
      *field = static_cast<int>(*r);
      return Status::Ok();
    };
  };
  std::map<std::string, Setter> with_value = {
      {"--out", text(&o.out)},
      {"--name", text(&o.name)},
      {"--device", integer(&o.device, 0, 63)},
      {"--seconds", number(&o.seconds, 0.1, 120)},
      {"--warmup", number(&o.warmup, 0, 60)},
      {"--expect", optional_number(&o.expect, 0, 100)},
      {"--tolerance", optional_number(&o.tolerance, 0, 100)},
      {"--at-least", optional_number(&o.at_least, 0, 100)},
      {"--streams", integer(&o.streams, 1, 2)},
      {"--neighbour-intervals", text(&o.neighbour_intervals)},
      {"--intervals-out", text(&o.intervals_out)},
      {"--ready-file", text(&o.ready_file)},
      {"--libcuda", text(&o.libcuda)},
      {"--libnvml", text(&o.libnvml)},
      {"--kernel-us", number(&o.kernel_us, 0, 1e6)},
      {"--duty", number(&o.duty, 0.01, 1)},
      {"--limit-gib", number(&o.limit_gib, 0.25, 1024)},
  };
  for (size_t i = 1; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool inline_value = false;
    if (size_t eq = flag.find('='); StartsWith(flag, "--") && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    if (flag == "--variable") {
      if (inline_value) return InvalidArgument("--variable takes no value");
      o.variable = true;
      continue;
    }
    auto it = with_value.find(flag);
    if (it == with_value.end()) {
      std::vector<std::string> known = {"--variable"};
      for (const auto& [name, setter] : with_value) known.push_back(name);
      std::string message = "unknown option " + flag;
      if (auto near = ClosestMatch(flag, known)) message += "; did you mean " + *near + "?";
      return InvalidArgument(message);
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return InvalidArgument(flag + " needs a value");
      value = args[++i];
    }
    RETURN_IF_ERROR(it->second(flag, value));
  }
  if (o.expect && o.at_least) return InvalidArgument("give --expect or --at-least, not both");
  return o;
}

}  // namespace tessera::gpu_check
