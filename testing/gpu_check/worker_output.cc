#include "worker_output.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "common/strings.h"

namespace tessera::gpu_check {

std::string FormatWorkerOutput(const WorkerOutput& w) {
  std::string out = "pid " + std::to_string(w.pid) + "\n";
  char line[128];
  for (int phase = 0; phase < 2; ++phase) {
    for (const ClockProbe& p : phase == 0 ? w.before : w.after) {
      std::snprintf(line, sizeof(line), "clock%d %" PRId64 " %" PRId64 " %" PRId64 "\n", phase,
                    p.host_before_ns, p.device_ns, p.host_after_ns);
      out += line;
    }
  }
  for (const Interval& i : w.intervals) {
    std::snprintf(line, sizeof(line), "i %" PRId64 " %" PRId64 "\n", i.start_ns, i.end_ns);
    out += line;
  }
  for (const Interval& g : w.gaps) {
    std::snprintf(line, sizeof(line), "g %" PRId64 " %" PRId64 "\n", g.start_ns, g.end_ns);
    out += line;
  }
  out += "missing " + std::to_string(w.missing) + "\ndone\n";
  return out;
}

namespace {

bool ParseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

Result<WorkerOutput> ParseWorkerOutput(std::string_view text) {
  WorkerOutput w;
  bool done = false;
  size_t number = 0;
  for (const std::string& raw : Split(text, '\n', /*skip_empty=*/false)) {
    ++number;
    std::string_view line = Trim(raw);
    if (line.empty()) continue;
    auto bad = [&](const char* why) {
      return InvalidArgument("line " + std::to_string(number) + " \"" + std::string(line) +
                             "\": " + why);
    };
    if (done) return bad("text after \"done\"");
    std::vector<std::string> f = Split(line, ' ');
    std::vector<int64_t> v(f.size(), 0);
    for (size_t k = 1; k < f.size(); ++k) {
      if (!ParseInt(f[k], &v[k])) return bad("not a whole number");
    }
    const std::string& key = f[0];
    if (key == "ready") {
      continue;
    } else if (key == "pid" && f.size() == 2) {
      w.pid = static_cast<int>(v[1]);
    } else if ((key == "clock0" || key == "clock1") && f.size() == 4) {
      (key == "clock0" ? w.before : w.after).push_back({v[1], v[2], v[3]});
    } else if ((key == "i" || key == "g") && f.size() == 3) {
      if (v[2] < v[1]) return bad("ends before it starts");
      (key == "i" ? w.intervals : w.gaps).push_back({v[1], v[2]});
    } else if (key == "missing" && f.size() == 2 && v[1] >= 0) {
      w.missing = static_cast<size_t>(v[1]);
    } else if (key == "done" && f.size() == 1) {
      done = true;
    } else {
      return bad("unknown line (want pid, clock0, clock1, i, g, missing or done)");
    }
  }
  if (!done) {
    return InvalidArgument(
        "incomplete: no \"done\" line (the process ended early, see its "
        "messages above)");
  }
  return w;
}

}  // namespace tessera::gpu_check
