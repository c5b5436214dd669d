// bench_scheduler: the scheduler's hot paths on a synthetic cluster of 5,000 nodes with 8 GPUs
// each and 40,000 running pods (issue 6). Prints filter latency over all nodes (p50, p99), bind
// decision latency without the API call (p50, p99), bind decisions per second in one thread, whole
// pod decisions per second (filter, prioritize and bind through the extender's JSON, one thread),
// and peak RSS, each against its target (ok or MISSED; the exit code does not depend on them).
//
//   bench_scheduler [--nodes N] [--pods N] [--filters N] [--decisions N] [--pod-decisions N]
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "log/log.h"
#include "scheduler/binder.h"
#include "scheduler/cluster_state.h"
#include "scheduler/dialect.h"
#include "scheduler/engine.h"
#include "scheduler/extender.h"

namespace tessera::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct Args {
  int nodes = 5000;
  int gpus = 8;
  int pods = 40000;
  int filters = 300;
  int decisions = 20000;
  int pod_decisions = 300;
};

// Bind decisions never reach an API server here.
class NoApiBinder : public Binder {
 public:
  Status Bind(const BindingRequest&) override { return Status::Ok(); }
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// CPU time of this thread: unlike wall time, not inflated when other processes take the cores.
double ThreadCpuMicros() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

std::string LoadAverage() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return "unknown";
  char buf[64] = {};
  std::string out =
      std::fgets(buf, sizeof(buf), f) ? std::string(buf, std::strcspn(buf, " ")) : "unknown";
  std::fclose(f);
  return out;
}

long PeakRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

struct Model {
  const char* name;
  uint64_t mib;
};
constexpr Model kModels[] = {
    {"NVIDIA A100-SXM4-80GB", 81920}, {"NVIDIA GeForce RTX 3090", 24268}, {"Tesla T4", 15360}};

json Node(int n, int gpus) {
  const Model& m = kModels[n % 3];
  std::string name = "node-" + std::to_string(n);
  std::vector<GpuInfo> list;
  for (int g = 0; g < gpus; ++g) {
    list.push_back({"GPU-" + std::to_string(n) + "-" + std::to_string(g), g, m.name, m.mib, 82,
                    g < gpus / 2 ? 0 : 1, true});
  }
  return {
      {"metadata",
       {{"name", name}, {"annotations", {{kInventoryAnnotation, InventoryToJson({true, list})}}}}}};
}

json Pod(const std::string& name, const json& limits) {
  return {
      {"metadata", {{"name", name}, {"namespace", "bench"}, {"uid", "uid-" + name}}},
      {"spec",
       {{"containers", json::array({{{"name", "main"}, {"resources", {{"limits", limits}}}}})}}},
      {"status", {{"phase", "Pending"}}}};
}

// The limits new pods ask for: the three dialects, one and two GPUs, and one that most nodes
// cannot hold.
std::vector<json> SampleLimits() {
  return {
      {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 4096}, {"nvidia.com/gpucores", 30}},
      {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 8000}},
      {{"tencent.com/vcuda-core", 50}, {"tencent.com/vcuda-memory", 16}},
      {{"aliyun.com/gpu-mem", 4}},
      {{"nvidia.com/gpumem-percentage", 25}},
      // Fits only the A100 nodes: two nodes in three answer with a reason, as unresolvable.
      {{"nvidia.com/gpumem", 30000}},
  };
}

std::vector<PodRequest> SampleRequests() {
  std::vector<json> limits = SampleLimits();
  std::vector<PodRequest> out;
  for (size_t i = 0; i < limits.size(); ++i) {
    Result<PodRequest> r = ParsePod(Pod("sample", limits[i]), DialectConfig{});
    if (!r.ok()) {
      std::fprintf(stderr, "bench: bad sample request: %s\n", r.status().message().c_str());
      std::exit(2);
    }
    out.push_back(*r);
  }
  return out;
}

// One extender call as the HTTP handler makes it, less the socket: parse the body, call. Only
// that is timed; writing the body and reading the answer are kube-scheduler's work.
struct Served {
  json answer;
  double us = 0;
};

template <typename Call>
Served Serve(Call call, const json& request) {
  std::string body = request.dump();
  auto s = Clock::now();
  Result<std::string> out = call(json::parse(body));
  double us = Micros(Clock::now() - s);
  if (!out.ok()) {
    std::fprintf(stderr, "bench: extender refused a request: %s\n", out.status().message().c_str());
    std::exit(2);
  }
  return {json::parse(*out), us};
}

// The extender's time for one pod, per verb, in microseconds.
struct PodTimes {
  double filter = 0, prioritize = 0, bind = 0;
  bool bound = false;
  double total() const { return filter + prioritize + bind; }
};

// One pod scheduled the way kube-scheduler drives the extender: filter with every node name,
// prioritize the nodes that passed, bind to the best-scored one.
PodTimes SchedulePod(Extender& extender, const json& pod, const std::vector<std::string>& names) {
  PodTimes t;
  json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
  Served filtered = Serve([&](const json& b) { return extender.Filter(b); }, args);
  std::vector<std::string> feasible = filtered.answer["NodeNames"];
  t.filter = filtered.us;
  if (feasible.empty()) return t;
  args["NodeNames"] = std::move(feasible);
  Served scored = Serve([&](const json& b) { return extender.Prioritize(b); }, args);
  std::string best;
  int best_score = -1;
  for (const json& s : scored.answer) {
    if (s["Score"].get<int>() > best_score) {
      best_score = s["Score"];
      best = s["Host"];
    }
  }
  const json& meta = pod["metadata"];
  json binding = {{"PodName", meta["name"]},
                  {"PodNamespace", meta["namespace"]},
                  {"PodUID", meta["uid"]},
                  {"Node", best}};
  Served result = Serve([&](const json& b) { return extender.Bind(b); }, binding);
  t.prioritize = scored.us;
  t.bind = result.us;
  t.bound = result.answer["Error"] == "";
  return t;
}

int Run(const Args& a) {
  log::Configure(log::Level::kError, log::Format::kText);
  std::mt19937 rng(1);
  ClusterState state{DialectConfig{}};
  NoApiBinder binder;
  Engine engine(state, binder, {}, nullptr);
  Metrics metrics;
  Extender extender(engine, state, metrics);

  auto t0 = Clock::now();
  std::vector<std::string> names;
  for (int n = 0; n < a.nodes; ++n) {
    (void)state.OnNode(EventType::kAdded, Node(n, a.gpus));
    names.push_back("node-" + std::to_string(n));
  }
  // Running pods, fed as watch events with their decision annotation: one per GPU round-robin.
  for (int p = 0; p < a.pods; ++p) {
    int n = p % a.nodes;
    int g = (p / a.nodes) % a.gpus;
    std::string name = "running-" + std::to_string(p);
    Allocation alloc{names[n],
                     {{"main",
                       false,
                       ComputeMode::kHard,
                       {{"GPU-" + std::to_string(n) + "-" + std::to_string(g),
                         static_cast<uint64_t>(1024 * (1 + rng() % 8)),
                         static_cast<int>(10 * (1 + rng() % 5)), 0, false}}}}};
    json pod = Pod(name, {{"nvidia.com/gpumem", 1024}});
    pod["spec"]["nodeName"] = names[n];
    pod["status"]["phase"] = "Running";
    pod["metadata"]["annotations"][kAllocationAnnotation] = AllocationToJson(alloc);
    (void)state.OnPod(EventType::kAdded, pod);
  }
  double build_s = std::chrono::duration<double>(Clock::now() - t0).count();
  long rss_state = PeakRssKiB();

  std::vector<PodRequest> requests = SampleRequests();
  std::vector<double> filter_us, filter_cpu_us;
  size_t fits = 0;
  for (int i = 0; i < a.filters; ++i) {
    const PodRequest& r = requests[i % requests.size()];
    double cpu = ThreadCpuMicros();
    auto s = Clock::now();
    FilterResult f = engine.Filter({"bench", "pod", ""}, r, names);
    filter_us.push_back(Micros(Clock::now() - s));
    filter_cpu_us.push_back(ThreadCpuMicros() - cpu);
    fits += f.fits.size();
  }
  std::vector<double> prio_us;
  for (int i = 0; i < a.filters / 3; ++i) {
    auto s = Clock::now();
    auto scores = engine.Prioritize({"bench", "pod", ""}, requests[i % requests.size()], names);
    prio_us.push_back(Micros(Clock::now() - s));
  }

  // Bind decisions (decide + reserve under the node's lock), kept: the cluster fills up.
  std::vector<double> decide_us;
  int decided = 0;
  std::uniform_int_distribution<int> pick_node(0, a.nodes - 1);
  auto all = Clock::now();
  for (int i = 0; i < a.decisions; ++i) {
    PodId id{"bench", "new-" + std::to_string(i), "uid-new-" + std::to_string(i)};
    const std::string& node = names[pick_node(rng)];
    const PodRequest& r = requests[i % requests.size()];
    auto s = Clock::now();
    Result<Allocation> d = engine.Decide(id, r, node);
    decide_us.push_back(Micros(Clock::now() - s));
    decided += d.ok();
  }
  double decide_total_s = std::chrono::duration<double>(Clock::now() - all).count();
  double per_second = a.decisions / decide_total_s;

  // Whole pod decisions through the extender, also kept.
  std::vector<json> limits = SampleLimits();
  std::vector<double> pod_us, pod_filter_us, pod_prioritize_us, pod_bind_us;
  int pods_bound = 0;
  double pod_total_us = 0;
  for (int i = 0; i < a.pod_decisions; ++i) {
    json pod = Pod("scheduled-" + std::to_string(i), limits[i % limits.size()]);
    (void)state.OnPod(EventType::kAdded, pod);  // bind binds only pods the pod watch has shown
    PodTimes t = SchedulePod(extender, pod, names);
    pod_us.push_back(t.total());
    pod_filter_us.push_back(t.filter);
    pod_prioritize_us.push_back(t.prioritize);
    pod_bind_us.push_back(t.bind);
    pod_total_us += t.total();
    pods_bound += t.bound;
  }
  double pods_per_second = a.pod_decisions / (pod_total_us / 1e6);
  long rss_peak = PeakRssKiB();

  double f50 = Percentile(filter_us, 0.5), f99 = Percentile(filter_us, 0.99);
  double d50 = Percentile(decide_us, 0.5), d99 = Percentile(decide_us, 0.99);
  double peak_mb = static_cast<double>(rss_peak) / 1024.0;

  std::printf(
      "bench_scheduler: %d nodes x %d GPUs, %d running pods (state built in %.2f s, RSS %.1f MB)\n",
      a.nodes, a.gpus, a.pods, build_s, static_cast<double>(rss_state) / 1024.0);
  std::printf(
      "  filter over all nodes     p50 %8.1f us  p99 %8.1f us   (target p99 <= 5000 us)  %s\n", f50,
      f99, f99 <= 5000 ? "ok" : "MISSED");
  std::printf("  filter, thread CPU time   p50 %8.1f us  p99 %8.1f us   (load average %s)\n",
              Percentile(filter_cpu_us, 0.5), Percentile(filter_cpu_us, 0.99),
              LoadAverage().c_str());
  std::printf("  prioritize over all nodes p50 %8.1f us  p99 %8.1f us\n", Percentile(prio_us, 0.5),
              Percentile(prio_us, 0.99));
  std::printf(
      "  bind decision (no API)    p50 %8.2f us  p99 %8.2f us   (target p99 <= 100 us)   %s\n", d50,
      d99, d99 <= 100 ? "ok" : "MISSED");
  std::printf(
      "  bind decisions per second, one thread: %.0f   (target >= 2000)  %s  [%d of %d placed]\n",
      per_second, per_second >= 2000 ? "ok" : "MISSED", decided, a.decisions);
  std::printf(
      "  pod decisions/s (filter + prioritize + bind over all nodes, one thread): %.0f   (target "
      ">= 2000)  %s  [%d of %d bound]\n",
      pods_per_second, pods_per_second >= 2000 ? "ok" : "MISSED", pods_bound, a.pod_decisions);
  std::printf(
      "    per pod                 p50 %8.1f us  p99 %8.1f us   (p50 filter %.1f, prioritize "
      "%.1f, bind %.1f us)\n",
      Percentile(pod_us, 0.5), Percentile(pod_us, 0.99), Percentile(pod_filter_us, 0.5),
      Percentile(pod_prioritize_us, 0.5), Percentile(pod_bind_us, 0.5));
  std::printf("  peak RSS: %.1f MB   (target <= 300 MB)  %s\n", peak_mb,
              peak_mb <= 300 ? "ok" : "MISSED");
  std::printf("  (average feasible nodes per filter: %.0f)\n",
              static_cast<double>(fits) / std::max(1, a.filters));
  // Targets are reported (MISSED above), not enforced through the exit code: a loaded machine
  // misses latency targets without anything being wrong.
  return 0;
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](int& out) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_scheduler: %s needs a number\n", argv[i]);
        std::exit(2);
      }
      out = std::atoi(argv[++i]);
      if (out <= 0) {
        std::fprintf(stderr, "bench_scheduler: %s must be positive\n", argv[i - 1]);
        std::exit(2);
      }
    };
    if (!std::strcmp(argv[i], "--nodes"))
      value(a.nodes);
    else if (!std::strcmp(argv[i], "--pods"))
      value(a.pods);
    else if (!std::strcmp(argv[i], "--filters"))
      value(a.filters);
    else if (!std::strcmp(argv[i], "--decisions"))
      value(a.decisions);
    else if (!std::strcmp(argv[i], "--pod-decisions"))
      value(a.pod_decisions);
    else {
      std::fprintf(stderr,
                   "usage: bench_scheduler [--nodes N] [--pods N] [--filters N] [--decisions N] "
                   "[--pod-decisions N]\n");
      std::exit(2);
    }
  }
  return a;
}

}  // namespace
}  // namespace tessera::scheduler

int main(int argc, char** argv) {
  return tessera::scheduler::Run(tessera::scheduler::ParseArgs(argc, argv));
}
