// cluster_scale: the real kube-scheduler placing pods on thousands of nodes, with and without the
// Tessera extender (issue 16). Prints figures; it checks nothing against a target.
//
// Needs a running API server (the dev cluster's, `scripts/bench` starts one) and the pinned
// kube-scheduler. Nodes are API objects only (no kubelet): status and a signed tessera.io/gpus
// inventory written here, labelled tessera.io/bench=true. For each node count, with every pod
// created before its kube-scheduler starts, so that what is timed is scheduling alone:
//   extender-100           deploy/: percentageOfNodesToScore 100 and the webhook's GPU node
//                          selector (tessera.io/gpu-node=true, on the GPU nodes)
//   extender-default       the selector, kube-scheduler's adaptive sample (at least 100 nodes)
//   extender-100-all-nodes percentage 100 without the selector: CPU-only nodes reach the extender
//   no-extender-100/-default  the same kube-scheduler on the same nodes, pods without GPUs
//   dra-100/-default       the same kube-scheduler allocating each pod's ResourceClaim (DRA with
//                          consumable capacity, docs/dra.md) from the GPU nodes' ResourceSlices,
//                          which are written here as the node agent would publish them
// Both schedulers' API clients get the same limit (500 requests/s, burst 1000): with the
// extender it is the Tessera scheduler that posts the Bindings.
// Pods of the extender runs ask for GPUs in the three dialects; a fraction of the nodes has GPUs
// (8 x 141 GiB), the rest only CPU, as on a cluster where GPU nodes are a minority. The runs use
// a Tessera scheduler of their own (scheduler.name bench-tessera, plain HTTP on loopback) and
// their own kube-scheduler processes, so the cluster's own schedulers never see these pods.
//
//   cluster_scale --kubeconfig K --kube-scheduler BIN --tessera BIN --annotation-key FILE
//                 [--nodes 1000,5000] [--pods 1000] [--gpu-nodes-percent 20] [--work DIR]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "annotations/names.h"
#include "annotations/signing.h"
#include "kube/client.h"
#include "kube/connection.h"
#include "kube/informer.h"
#include "node/dra/slice_content.h"
#include "node/gpu/inventory.h"

namespace {

using tessera::Status;
using tessera::kube::Client;
using tessera::kube::Json;
using Clock = std::chrono::steady_clock;

constexpr char kBenchLabel[] = "tessera.io/bench";
constexpr int kExtenderPort = 18443;

struct Args {
  std::string kubeconfig, kube_scheduler, tessera, annotation_key,
      work = "/tmp/tessera-cluster-scale";
  std::vector<int> nodes = {1000, 5000};
  int pods = 1000;
  int gpu_percent = 20;
};

[[noreturn]] void Die(const std::string& why) {
  std::cerr << "cluster_scale: " << why << "\n";
  std::exit(1);
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) Die("flag " + flag + " needs a value");
    std::string v = argv[++i];
    if (flag == "--kubeconfig") {
      a.kubeconfig = v;
    } else if (flag == "--kube-scheduler") {
      a.kube_scheduler = v;
    } else if (flag == "--tessera") {
      a.tessera = v;
    } else if (flag == "--annotation-key") {
      a.annotation_key = v;
    } else if (flag == "--work") {
      a.work = v;
    } else if (flag == "--pods") {
      a.pods = std::stoi(v);
    } else if (flag == "--gpu-nodes-percent") {
      a.gpu_percent = std::stoi(v);
    } else if (flag == "--nodes") {
      a.nodes.clear();
      std::stringstream list(v);
      for (std::string n; std::getline(list, n, ',');) a.nodes.push_back(std::stoi(n));
    } else {
      Die("unknown flag " + flag);
    }
  }
  if (a.kubeconfig.empty() || a.kube_scheduler.empty() || a.tessera.empty() ||
      a.annotation_key.empty()) {
    Die("--kubeconfig, --kube-scheduler, --tessera and --annotation-key are required");
  }
  return a;
}

// Runs fn(i) for i in [0, n) on `threads` threads; the first error wins.
Status ForEach(int n, int threads, const std::function<Status(int)>& fn) {
  std::atomic<int> next{0};
  std::mutex mu;
  Status first;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i; (i = next++) < n;) {
        Status s = fn(i);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (first.ok()) first = s;
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return first;
}

struct Process {
  pid_t pid = -1;
  void Start(const std::vector<std::string>& argv, const std::string& log) {
    pid = fork();
    if (pid < 0) Die("fork failed");
    if (pid == 0) {
      FILE* out = std::fopen(log.c_str(), "a");
      if (out) {
        dup2(fileno(out), 1);
        dup2(fileno(out), 2);
      }
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  void Stop() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Process() { Stop(); }
};

std::string NodeName(int i) {
  return "bench-n-" + std::to_string(i);
}
bool IsGpuNode(int i, int percent) {
  return i % 100 < percent;
}

Json NodeObject(int i, int gpu_percent) {
  Json labels = {{kBenchLabel, "true"}, {"kubernetes.io/hostname", NodeName(i)}};
  if (IsGpuNode(i, gpu_percent)) labels["tessera.io/gpu-node"] = "true";
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", NodeName(i)}, {"labels", labels}}}};
}

Json NodeStatus() {
  Json allocatable = {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}};
  return {{"capacity", allocatable},
          {"allocatable", allocatable},
          {"conditions",
           {{{"type", "Ready"},
             {"status", "True"},
             {"reason", "KubeletReady"},
             {"message", "an API object of cluster_scale"}}}}};
}

// A GPU node's 8 GPUs, which both its inventory annotation and its ResourceSlice describe.
std::vector<tessera::node::GpuInfo> BenchGpus(int i) {
  std::vector<tessera::node::GpuInfo> gpus;
  for (int g = 0; g < 8; ++g) {
    gpus.push_back({.uuid = "GPU-bench-" + std::to_string(i) + "-" + std::to_string(g),
                    .index = g,
                    .model = "NVIDIA H200",
                    .memory_mib = 144384,
                    .sms = 132,
                    .numa = g / 4});
  }
  return gpus;
}

// The node's inventory as its agent writes it (10 vGPU slots per GPU, serving).
std::string Inventory(int i) {
  return tessera::node::GpusAnnotation(BenchGpus(i), /*cores_scaling=*/1.0, /*slots=*/10,
                                       /*serving=*/true);
}

// The GPU node's ResourceSlice as its agent would publish it in DRA mode.
Json SliceObject(int i, const std::string& node_uid) {
  Json slice = tessera::node::ResourceSliceObject({NodeName(i), node_uid},
                                                  tessera::node::SliceDevices(BenchGpus(i)), 1);
  slice["metadata"]["labels"] = {{kBenchLabel, "true"}};
  return slice;
}

Status CreateNodes(Client& client, const tessera::annotations::Signing& signing, int n,
                   int gpu_percent) {
  return ForEach(n, 8, [&](int i) -> Status {
    tessera::Result<Json> node =
        client.Create(tessera::kube::kNodes, "", NodeObject(i, gpu_percent));
    if (!node.ok()) return node.status();
    tessera::Result<Json> status =
        client.PatchStatus(tessera::kube::kNodes, "", NodeName(i), NodeStatus());
    if (!status.ok()) return status.status();
    if (!IsGpuNode(i, gpu_percent)) return Status::Ok();
    tessera::kube::StringMapChanges annotations;
    std::string uid = (*node)["metadata"]["uid"];
    for (auto& [name, value] : signing.Signed(tessera::annotations::kGpus, uid, Inventory(i))) {
      annotations[name] = value;
    }
    Status patched =
        client.PatchAnnotations(tessera::kube::kNodes, "", NodeName(i), annotations).status();
    if (!patched.ok()) return patched;
    return client.Create(tessera::kube::kResourceSlices, "", SliceObject(i, uid)).status();
  });
}

// The GPU requests of the extender runs, in turn: vGPU, vcuda, gpushare.
Json Limits(int i, bool gpu) {
  if (!gpu) return {{"cpu", "100m"}};
  switch (i % 3) {
    case 0:
      return {{"cpu", "100m"}, {"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4096"}};
    case 1:
      return {
          {"cpu", "100m"}, {"tencent.com/vcuda-core", "20"}, {"tencent.com/vcuda-memory", "16"}};
    default:
      return {{"cpu", "100m"}, {"aliyun.com/gpu-mem", "4"}};
  }
}

struct Variant {
  std::string name;
  std::string scheduler;  // the profile's schedulerName
  bool extender;
  int percentage;          // percentageOfNodesToScore, 0 = kube-scheduler's default
  bool gpu_node_selector;  // the pods select tessera.io/gpu-node=true, as the webhook gives them
  bool dra = false;        // each pod has a ResourceClaim of the GPU the extender runs ask for
};

// The DRA runs' claim of pod i: the extender runs' requests in turn (4 GiB; the vcuda pods 20%
// of the cores too), as the webhook's DRA mode would write them.
Json ClaimObject(int i, const std::string& run) {
  Json requests = {{"memory", "4Gi"}};
  if (i % 3 == 1) requests["cores"] = "20";
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata",
           {{"name", run + "-" + std::to_string(i)},
            {"namespace", "default"},
            {"labels", {{kBenchLabel, run}}}}},
          {"spec",
           {{"devices",
             {{"requests",
               {{{"name", "gpu"},
                 {"exactly",
                  {{"deviceClassName", "gpu.tessera.io"},
                   {"capacity", {{"requests", requests}}}}}}}}}}}}};
}

Json PodObject(int i, const Variant& v, const std::string& run) {
  Json selector = {{kBenchLabel, "true"}};
  if (v.gpu_node_selector) selector["tessera.io/gpu-node"] = "true";
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", run + "-" + std::to_string(i)},
                {"namespace", "default"},
                // The webhook is not involved: the runs name their own scheduler.
                {"labels", {{kBenchLabel, run}, {"tessera.io/webhook", "ignore"}}}}},
              {"spec",
               {{"schedulerName", v.scheduler},
                {"nodeSelector", selector},
                // No kubelet ever reports these nodes: tolerate the taints that this brings.
                {"tolerations", {{{"operator", "Exists"}}}},
                {"containers",
                 {{{"name", "main"},
                   {"image", "tessera.local/workload:dev"},
                   {"resources",
                    {{"limits", Limits(i, v.extender)}, {"requests", Limits(i, v.extender)}}}}}}}}};
  if (v.dra) {
    pod["spec"]["resourceClaims"] = {
        {{"name", "gpu"}, {"resourceClaimName", run + "-" + std::to_string(i)}}};
    pod["spec"]["containers"][0]["resources"]["claims"] = {{{"name", "gpu"}}};
  }
  return pod;
}

Status DeleteAll(Client& client, const std::string& collection, const std::string& selector) {
  Json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"gracePeriodSeconds", 0}};
  return client.Request("DELETE", collection + "?labelSelector=" + selector, &options).status();
}

// The DeviceClass of deploy/ (DRA runs), unless the cluster has it.
Status EnsureDeviceClass(Client& client) {
  Json device_class = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "DeviceClass"},
      {"metadata", {{"name", tessera::node::kDraDriverName}}},
      {"spec",
       {{"selectors", {{{"cel", {{"expression", "device.driver == \"gpu.tessera.io\""}}}}}}}}};
  tessera::Result<Json> made = client.Create(tessera::kube::kDeviceClasses, "", device_class);
  if (made.ok() || made.status().code() == tessera::StatusCode::kAlreadyExists) return Status::Ok();
  return made.status();
}

void DeleteBenchObjects(Client& client) {
  const std::string selector = std::string(kBenchLabel) + "%3Dtrue";
  (void)DeleteAll(client, tessera::kube::CollectionPath(tessera::kube::kResourceSlices, ""),
                  selector);
  (void)DeleteAll(client, "/api/v1/nodes", selector);
}

struct Histogram {
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
  double count = 0;
  double Quantile(double q) const {
    double rank = q * count, prev_le = 0, prev_count = 0;
    for (const auto& [le, c] : buckets) {
      if (c >= rank && c > prev_count) {
        if (le == INFINITY) return prev_le;
        return prev_le + (le - prev_le) * (rank - prev_count) / (c - prev_count);
      }
      prev_le = le == INFINITY ? prev_le : le;
      prev_count = c;
    }
    return prev_le;
  }
};

// The scheduler's histogram `name` from its /metrics text.
Histogram ReadHistogram(const std::string& text, const std::string& name) {
  Histogram h;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "_bucket{le=\"", 0) == 0) {
      size_t start = name.size() + 12, end = line.find('"', start);
      std::string le = line.substr(start, end - start);
      h.buckets.emplace_back(le == "+Inf" ? INFINITY : std::stod(le),
                             std::stod(line.substr(line.rfind(' ') + 1)));
    } else if (line.rfind(name + "_count ", 0) == 0) {
      h.count = std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return h;
}

std::string Fetch(const std::string& url) {
  std::string out;
  FILE* p = popen(("curl -s --max-time 5 " + url).c_str(), "r");
  if (!p) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

// CPU time (user + system) a process has used, in ms.
double CpuMs(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(f);  // utime, stime
  }
  return ticks * 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

long RssKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

std::string KubeSchedulerConfig(const Variant& v, const Args& a, int port) {
  std::ostringstream c;
  c << "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    << "clientConnection:\n  kubeconfig: " << a.kubeconfig << "\n  qps: 500\n  burst: 1000\n"
    << "leaderElection:\n  leaderElect: false\nprofiles:\n  - schedulerName: " << v.scheduler
    << "\n";
  if (v.percentage > 0) c << "    percentageOfNodesToScore: " << v.percentage << "\n";
  if (v.extender) {
    c << "extenders:\n  - urlPrefix: http://127.0.0.1:" << port << "\n"
      << "    filterVerb: filter\n    prioritizeVerb: prioritize\n    bindVerb: bind\n"
      << "    preemptVerb: preempt\n    weight: 5\n    enableHTTPS: false\n"
      << "    httpTimeout: 5s\n    nodeCacheCapable: true\n    ignorable: false\n"
      << "    managedResources:\n";
    for (const char* r : {"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
                          "nvidia.com/gpucores", "tencent.com/vcuda-core",
                          "tencent.com/vcuda-memory", "aliyun.com/gpu-mem"}) {
      c << "      - name: " << r << "\n        ignoredByScheduler: true\n";
    }
  }
  return c.str();
}

// One run: creates the pods, starts kube-scheduler, waits for every pod to be bound.
struct RunResult {
  double pods_per_s = 0, first_s = 0, total_s = 0;
  int bound = 0;
  double kube_scheduler_cpu_ms = 0;  // the run's kube-scheduler, start to stop
};

RunResult Run(Client& client, const Args& a, const Variant& v, int nodes, int round) {
  const std::string run = "r" + std::to_string(nodes) + "-" + std::to_string(round);
  Status created = ForEach(a.pods, 8, [&](int i) {
    if (v.dra) {
      Status claim =
          client.Create(tessera::kube::kResourceClaims, "default", ClaimObject(i, run)).status();
      if (!claim.ok()) return claim;
    }
    return client.Create(tessera::kube::kPods, "default", PodObject(i, v, run)).status();
  });
  if (!created.ok()) Die("creating pods: " + created.message());

  std::mutex mu;
  std::vector<Clock::time_point> bound_at;
  std::map<std::string, bool> seen;
  auto note = [&](const Json& pod) {
    if (pod["spec"].value("nodeName", "").empty()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (seen.emplace(pod["metadata"]["name"], true).second) bound_at.push_back(Clock::now());
  };
  tessera::kube::Informer informer(
      client, tessera::kube::kPods,
      {.name = "bench pods", .selectors = {.label_selector = std::string(kBenchLabel) + "=" + run}},
      {.on_add = note, .on_update = [&](const Json&, const Json& p) { note(p); }});
  informer.Start();
  informer.WaitForSync(std::chrono::seconds(60));

  std::string config = a.work + "/" + run + "-" + v.name + ".yaml";
  std::ofstream(config) << KubeSchedulerConfig(v, a, kExtenderPort);
  Process scheduler;
  auto start = Clock::now();
  scheduler.Start({a.kube_scheduler, "--config=" + config, "--secure-port=0", "--v=1"},
                  a.work + "/kube-scheduler-" + v.name + ".log");
  const auto deadline = start + std::chrono::minutes(10);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (static_cast<int>(bound_at.size()) >= a.pods) break;
    }
    if (Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  RunResult r;
  r.kube_scheduler_cpu_ms = CpuMs(scheduler.pid);
  scheduler.Stop();
  informer.Stop();
  std::lock_guard<std::mutex> lock(mu);
  r.bound = static_cast<int>(bound_at.size());
  if (r.bound > 1) {
    std::sort(bound_at.begin(), bound_at.end());
    auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    r.first_s = secs(bound_at.front() - start);
    r.total_s = secs(bound_at.back() - start);
    r.pods_per_s = (r.bound - 1) / std::max(1e-9, secs(bound_at.back() - bound_at.front()));
  }
  Status deleted =
      DeleteAll(client, "/api/v1/namespaces/default/pods", std::string(kBenchLabel) + "%3D" + run);
  if (!deleted.ok()) Die("deleting pods: " + deleted.message());
  if (v.dra) {
    deleted =
        DeleteAll(client, tessera::kube::CollectionPath(tessera::kube::kResourceClaims, "default"),
                  std::string(kBenchLabel) + "%3D" + run);
    if (!deleted.ok()) Die("deleting claims: " + deleted.message());
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  std::system(("mkdir -p " + a.work).c_str());
  tessera::kube::Environment env;
  tessera::Result<tessera::kube::ConnectionConfig> connection =
      tessera::kube::ResolveConnection(a.kubeconfig, env);
  if (!connection.ok()) Die(connection.status().message());
  auto client = Client::Create(*connection, {.qps = 0, .timeout = std::chrono::seconds(60)});
  if (!client.ok()) Die(client.status().message());
  auto signing = tessera::annotations::Signing::FromKeyFile(a.annotation_key);
  if (!signing.ok()) Die(signing.status().message());
  DeleteBenchObjects(**client);
  Status device_class = EnsureDeviceClass(**client);
  if (!device_class.ok()) Die("creating the DeviceClass: " + device_class.message());

  Process tessera;
  tessera.Start(
      {a.tessera, "scheduler", "--kubeconfig", a.kubeconfig,
       "--listen=127.0.0.1:" + std::to_string(kExtenderPort), "--scheduler.name=bench-tessera",
       "--scheduler.annotation-key-file=" + a.annotation_key, "--log.level=warn",
       "--log.format=json"},
      a.work + "/tessera-scheduler.log");
  const std::string metrics = "http://127.0.0.1:" + std::to_string(kExtenderPort) + "/metrics";
  const std::vector<Variant> variants = {
      {"extender-100", "bench-tessera", true, 100, true},
      {"extender-default", "bench-tessera", true, 0, true},
      {"extender-100-all-nodes", "bench-tessera", true, 100, false},
      {"no-extender-100", "bench-plain", false, 100, false},
      {"no-extender-default", "bench-plain", false, 0, false},
      {"dra-100", "bench-plain", false, 100, false, true},
      {"dra-default", "bench-plain", false, 0, false, true}};
  int round = 0;
  for (int nodes : a.nodes) {
    auto t0 = Clock::now();
    Status made = CreateNodes(**client, *signing, nodes, a.gpu_percent);
    if (!made.ok()) Die("creating nodes: " + made.message());
    std::cout << "== " << nodes << " nodes (" << nodes * a.gpu_percent / 100
              << " with 8 GPUs), created in "
              << std::chrono::duration<double>(Clock::now() - t0).count() << " s; " << a.pods
              << " pods a run\n";
    std::this_thread::sleep_for(std::chrono::seconds(3));  // the Tessera scheduler's node watch
    std::map<std::string, double> rate;
    for (const Variant& v : variants) {
      std::string before = Fetch(metrics);
      const double tessera_cpu = CpuMs(tessera.pid);
      RunResult r = Run(**client, a, v, nodes, round++);
      std::string after = Fetch(metrics);
      rate[v.name] = r.pods_per_s;
      Json line = {
          {"nodes", nodes},          {"variant", v.name},          {"pods", a.pods},
          {"bound", r.bound},        {"pods_per_s", r.pods_per_s}, {"first_bound_s", r.first_s},
          {"all_bound_s", r.total_s}};
      if (v.extender) {
        for (const char* verb : {"filter", "prioritize", "bind"}) {
          std::string name = std::string("tessera_scheduler_") + verb + "_seconds";
          Histogram h0 = ReadHistogram(before, name), h1 = ReadHistogram(after, name);
          for (size_t i = 0; i < h1.buckets.size() && i < h0.buckets.size(); ++i) {
            h1.buckets[i].second -= h0.buckets[i].second;
          }
          h1.count -= h0.count;
          line[std::string(verb) + "_p50_ms"] = h1.Quantile(0.5) * 1000;
          line[std::string(verb) + "_p99_ms"] = h1.Quantile(0.99) * 1000;
        }
      }
      line["kube_scheduler_cpu_ms_per_pod"] = r.kube_scheduler_cpu_ms / a.pods;
      if (v.extender) line["tessera_cpu_ms_per_pod"] = (CpuMs(tessera.pid) - tessera_cpu) / a.pods;
      line["tessera_rss_mib"] = RssKiB(tessera.pid) / 1024.0;
      std::cout << line.dump() << "\n" << std::flush;
    }
    for (const char* p : {"100", "default"}) {
      double own = rate[std::string("no-extender-") + p];
      if (own <= 0) continue;
      std::cout << "   percentageOfNodesToScore " << p << ", " << nodes
                << " nodes: with the extender " << 100.0 * rate[std::string("extender-") + p] / own
                << "% of kube-scheduler's own throughput (goal: 80% or more); DRA claims "
                << 100.0 * rate[std::string("dra-") + p] / own << "%\n";
    }
    DeleteBenchObjects(**client);
  }
  return 0;
}
