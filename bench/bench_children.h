// What the benchmarks that measure the in-container library share: they run themselves (or
// another program) as child processes with and without the library preloaded, and read Google
// Benchmark's JSON from a child. Header-only, for bench_hook and bench_spill; thread-safe (no
// shared state; Capture may run from several threads at once).
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::bench {

// An environment to run a child in: the inherited one (less LD_PRELOAD) and `env`.
struct Setting {
  std::string name;
  std::vector<std::string> env;  // K=V added to the inherited environment
};

inline std::vector<char*> Pointers(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

inline std::vector<std::string> Environment(const Setting& setting) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
  }
  env.insert(env.end(), setting.env.begin(), setting.env.end());
  return env;
}

// Runs argv with the setting's environment; returns stdout ("" on failure: the program could not
// start or did not exit 0).
inline std::string Capture(std::vector<std::string> argv, const Setting& setting,
                           int stdin_fd = -1) {
  int out[2];
  if (pipe(out) != 0) return "";
  std::vector<std::string> env = Environment(setting);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    if (stdin_fd >= 0) dup2(stdin_fd, 0);
    close(out[0]);
    auto a = Pointers(argv);
    auto e = Pointers(env);
    execve(a[0], a.data(), e.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) text.append(buf, n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? text : "";
}

// Runs `self --child` (a Google Benchmark main) in the setting, 3 repetitions, and returns each
// benchmark's median real time (ns) by name; a benchmark that failed or skipped is left out, and
// the map is empty when the child failed.
inline std::map<std::string, double> BenchmarkTimes(const std::string& self, const Setting& setting,
                                                    const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {self, "--child", "--benchmark_format=json",
                                   "--benchmark_repetitions=3",
                                   "--benchmark_report_aggregates_only=true"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::map<std::string, double> times;
  std::string out = Capture(argv, setting);
  if (out.empty()) return times;
  nlohmann::json json = nlohmann::json::parse(out, nullptr, false);
  if (json.is_discarded()) return times;
  for (const auto& b : json["benchmarks"]) {
    if (b.contains("error_occurred") && b["error_occurred"].get<bool>()) continue;
    // The median of the repetitions, under the benchmark's own name.
    if (!b.contains("aggregate_name") || b["aggregate_name"] != "median") continue;
    times[b["run_name"].get<std::string>()] = b["real_time"].get<double>();
  }
  return times;
}

// Keeps, per benchmark, the lowest time of `into` and `from`: on a shared machine the least
// disturbed round.
inline void KeepMin(std::map<std::string, double>& into,
                    const std::map<std::string, double>& from) {
  for (const auto& [name, ns] : from) {
    if (!into.count(name) || ns < into[name]) into[name] = ns;
  }
}

}  // namespace tessera::bench
