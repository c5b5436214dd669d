#include "demo/demo_story.h"

#include <stdio.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "demo/demo_cluster.h"
#include "demo/http_json.h"
#include "demo/kube_scheduler_stand_in.h"
#include "demo/narrator.h"

namespace tessera::demo {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kCudaErrorOutOfMemory = 2;
constexpr double kComputeTolerance = 5.0;  // percentage points over the share

const DemoNode kNodeA{"node-a", "gpu=SimGPU-3090:24268MiB:82;gpu=SimGPU-3090:24268MiB:82", 2};
const DemoNode kNodeB{"node-b",
                      "gpu=SimGPU-H200:141GiB:132;gpu=SimGPU-H200:141GiB:132;"
                      "gpu=SimGPU-H200:141GiB:132;gpu=SimGPU-H200:141GiB:132",
                      4};

struct CommandResult {
  int rc = -1;
  std::string output;
};

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command line, stdout and stderr together.
CommandResult RunCommand(const std::string& line) {
  CommandResult r;
  FILE* p = ::popen((line + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The `key=value` lines of a workload's output, and the other lines (for people).
struct WorkloadReport {
  std::map<std::string, std::string> values;
  std::string text;
};

WorkloadReport ParseReport(const std::string& output) {
  WorkloadReport r;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    size_t eq = line.find('=');
    if (eq != std::string::npos && line.find(' ') == std::string::npos) {
      r.values[line.substr(0, eq)] = line.substr(eq + 1);
    } else {
      r.text += line + "\n";
    }
  }
  return r;
}

double Number(const WorkloadReport& r, const std::string& key) {
  auto it = r.values.find(key);
  return it == r.values.end() ? -1 : std::atof(it->second.c_str());
}

class Story {
 public:
  Story(DemoCluster& cluster, Narrator& n) : cluster_(cluster), n_(n), api_(cluster.api_url()) {}

  std::string Kubectl(const std::string& args) {
    return "KUBECONFIG=" + ShellQuote(cluster_.kubeconfig()) +
           " PATH=" + ShellQuote(cluster_.paths().bin_dir) + ":\"$PATH\" kubectl " + args;
  }

  std::string Example(const std::string& file) {
    return ShellQuote(cluster_.paths().examples_dir + "/" + file);
  }

  void Nodes() {
    for (const DemoNode* node : {&kNodeA, &kNodeB}) {
      Result<json> n = api_.Get("/api/v1/nodes/" + node->name);
      if (!n.ok()) continue;
      json inv = json::parse((*n)["metadata"]["annotations"].value("tessera.io/gpus", "{}"));
      const json& gpu = inv["gpus"][0];
      const json& alloc = (*n)["status"]["allocatable"];
      n_.Say(node->name + ": " + std::to_string(inv["gpus"].size()) + " x " +
             gpu.value("model", "") + " with " + std::to_string(gpu.value("memoryMiB", 0)) +
             " MiB each; kubelet counts " + alloc.value("tencent.com/vcuda-core", "?") +
             " vcuda-core, " + alloc.value("tencent.com/vcuda-memory", "?") + " vcuda-memory, " +
             alloc.value("nvidia.com/gpu", "?") + " nvidia.com/gpu, " +
             alloc.value("aliyun.com/gpu-mem", "?") + " aliyun.com/gpu-mem devices");
    }
  }

  // Creates the pod of `file` and follows it to its container's program; checks the decision
  // against `want_mib` of memory and `want_cores` percent.
  void DialectPod(const std::string& file, const std::string& pod, int want_mib, int want_cores) {
    n_.Say("$ kubectl create -f examples/" + file);
    CommandResult created = RunCommand(Kubectl("create -f " + Example(file)));
    n_.Quote(created.output);
    if (!n_.Check(created.rc == 0, "kubectl created the pod",
                  "exit " + std::to_string(created.rc))) {
      return;
    }
    json p;
    std::string allocation_id;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(45);
    while (std::chrono::steady_clock::now() < deadline) {
      Result<json> got = api_.Get("/api/v1/namespaces/default/pods/" + pod);
      if (got.ok()) {
        p = *got;
        json allocated = json::parse(
            p["metadata"].value("annotations", json::object()).value("tessera.io/allocated", "{}"),
            nullptr, false);
        if (allocated.is_object() && allocated.contains("main")) {
          allocation_id = allocated["main"].value("allocation", "");
          if (fs::exists(cluster_.out_dir() + "/" + allocation_id + ".txt")) break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const json& meta = p.value("metadata", json::object());
    const json& spec = p.value("spec", json::object());
    n_.Check(spec.value("schedulerName", "") == "tessera",
             "the admission webhook set schedulerName: tessera when the pod was created",
             "schedulerName is '" + spec.value("schedulerName", "") + "'");
    std::string node = spec.value("nodeName", "");
    if (!n_.Check(!node.empty(), "the scheduler bound the pod to a node",
                  "still unbound after 45 s")) {
      return;
    }
    json decision =
        json::parse(meta.value("annotations", json::object()).value("tessera.io/allocation", "{}"),
                    nullptr, false);
    json device = decision.is_object() && !decision.value("containers", json::array()).empty()
                      ? decision["containers"][0]["devices"][0]
                      : json::object();
    int mib = device.value("memoryMiB", 0);
    int cores = device.value("cores", 0);
    std::string mode = decision.is_object() ? decision["containers"][0].value("mode", "") : "";
    n_.Say(
        "kube-scheduler (the stand-in) asked the extender: filter -> prioritize -> bind. "
        "Tessera bound it to " +
        node + ", GPU " + GpuName(node, device.value("uuid", "")) + ": " + std::to_string(mib) +
        " MiB, " +
        (cores == 0 ? std::string("no compute limit") : std::to_string(cores) + "% compute") +
        (mode.empty() ? "" : ", mode " + mode) +
        (device.contains("coresLimit")
             ? " (may burst to " + std::to_string(device.value("coresLimit", 0)) + "%)"
             : ""));
    n_.Check(mib == want_mib && cores == want_cores, "the decision is " + std::to_string(want_mib) +
                                                         " MiB and " + std::to_string(want_cores) +
                                                         "% compute, as the pod asked");
    std::string out_file = cluster_.out_dir() + "/" + allocation_id + ".txt";
    if (!n_.Check(!allocation_id.empty() && fs::exists(out_file),
                  "the fake kubelet started the container (device plugin Allocate, "
                  "PreStartContainer, limits written by tessera node)")) {
      return;
    }
    WorkloadReport report = ParseReport(ReadFile(out_file));
    n_.Say("Its program (tessera-demo-workload, under libtessera-cuda.so over simgpu) printed:");
    n_.Quote(report.text);
    n_.Check(report.values["exit"] == "0", "the program ran to its end",
             "exit " + report.values["exit"]);
    n_.Check(Number(report, "nvml.total_mib") == mib,
             "NVML (what nvidia-smi shows) reports " + std::to_string(mib) +
                 " MiB as the GPU's total memory, not the card's",
             "it reported " + report.values["nvml.total_mib"]);
    double got = Number(report, "oom.allocated_mib");
    n_.Check(Number(report, "oom.error") == kCudaErrorOutOfMemory && got <= mib && got > mib - 64,
             "allocations stopped with CUDA_ERROR_OUT_OF_MEMORY at the " + std::to_string(mib) +
                 " MiB limit",
             "allocated " + report.values["oom.allocated_mib"] + " MiB, error " +
                 report.values["oom.error"]);
    double percent = Number(report, "compute.percent");
    // Hard: held to cores; elastic with coresLimit (vcuda-core-limit): held to it while alone.
    int ceiling = mode == "hard" ? cores : device.value("coresLimit", 0);
    if (cores > 0 && cores < 100 && ceiling > 0 && ceiling < 100) {
      std::string what = mode == "hard" ? "its " + std::to_string(cores) + "% compute share"
                                        : "its " + std::to_string(ceiling) +
                                              "% burst ceiling (elastic, alone on the GPU)";
      n_.Check(percent >= 0 && percent <= ceiling + kComputeTolerance,
               "the program was held to " + what + " (it got " + report.values["compute.percent"] +
                   "% of the GPU's time)",
               "it got " + report.values["compute.percent"] + "%");
    } else if (percent >= 0) {
      n_.Say("It used " + report.values["compute.percent"] + "% of the GPU's time" +
             (cores == 0 ? " (this request has no compute limit)."
                         : " (elastic: it may use time no one else uses)."));
    }
  }

  std::string GpuName(const std::string& node, const std::string& uuid) {
    Result<json> n = api_.Get("/api/v1/nodes/" + node);
    if (!n.ok()) return uuid;
    json inv =
        json::parse((*n)["metadata"]["annotations"].value("tessera.io/gpus", "{}"), nullptr, false);
    if (!inv.is_object()) return uuid;
    for (const json& g : inv.value("gpus", json::array())) {
      if (g.value("uuid", "") == uuid) {
        return std::to_string(g.value("index", -1)) + " (" + g.value("model", "") + ", " +
               uuid.substr(0, 12) + "...)";
      }
    }
    return uuid;
  }

  void InvalidPod() {
    n_.Say("$ kubectl create -f examples/vcuda-invalid-core.yaml");
    CommandResult created = RunCommand(Kubectl("create -f " + Example("vcuda-invalid-core.yaml")));
    n_.Quote(created.output);
    n_.Check(created.rc != 0 && created.output.find("denied the request") != std::string::npos &&
                 created.output.find("150") != std::string::npos,
             "the admission webhook denied the pod, and the message says what is allowed");
    n_.Check(!api_.Get("/api/v1/namespaces/default/pods/vcuda-150-cores").ok(),
             "the pod does not exist");
  }

  void PendingPod() {
    n_.Say("$ kubectl create -f examples/vcuda-95-units.yaml");
    CommandResult created = RunCommand(Kubectl("create -f " + Example("vcuda-95-units.yaml")));
    n_.Quote(created.output);
    if (!n_.Check(created.rc == 0, "kubectl created the pod")) return;
    std::string message;
    json p;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (message.empty() && std::chrono::steady_clock::now() < deadline) {
      Result<json> got = api_.Get("/api/v1/namespaces/default/pods/vcuda-95-units");
      if (got.ok()) {
        p = *got;
        for (const json& c : p["status"].value("conditions", json::array())) {
          if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") {
            message = c.value("message", "");
          }
        }
      }
      if (message.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    n_.Say("The extender's filter found no node; the reason kube-scheduler records on the pod:");
    n_.Quote(message);
    n_.Check(message.find("24320 MiB") != std::string::npos &&
                 message.find("24268 MiB") != std::string::npos,
             "the reason names the 24320 MiB asked and the 24268 MiB a card has");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    Result<json> later = api_.Get("/api/v1/namespaces/default/pods/vcuda-95-units");
    n_.Check(later.ok() && (*later)["spec"].value("nodeName", "").empty() &&
                 (*later)["status"].value("phase", "") == "Pending",
             "1.5 s later the pod is still Pending and unbound");
  }

  void Inspect() {
    n_.Say("$ kubectl tessera inspect -d");
    CommandResult shown = RunCommand(Kubectl("tessera inspect -d"));
    n_.Quote(shown.output);
    n_.Check(shown.rc == 0 && shown.output.find("node-a") != std::string::npos &&
                 shown.output.find("node-b") != std::string::npos &&
                 shown.output.find("vcuda-95-units") != std::string::npos,
             "inspect shows both nodes, the pods' shares and the pending pod",
             "exit " + std::to_string(shown.rc));
  }

 private:
  DemoCluster& cluster_;
  Narrator& n_;
  HttpJson api_;
};

int Run(DemoCluster& cluster, Narrator& n) {
  n.Step("Starting a small cluster on this machine");
  Status s = cluster.StartApiServer();
  if (!n.Check(s.ok(), "the fake Kubernetes API server is up", s.message())) return 1;
  n.Say("A fake Kubernetes API server listens at " + cluster.api_url() +
        "; kubectl talks to it, and it sends every new pod through Tessera's admission webhook.");
  s = cluster.StartScheduler();
  if (!n.Check(s.ok(), "tessera scheduler is ready", s.message())) return 1;
  n.Say("tessera scheduler listens at " + cluster.scheduler_url() +
        ": the extender (filter, prioritize, bind) and the admission webhook (mutate, validate).");
  for (const DemoNode* node : {&kNodeA, &kNodeB}) {
    s = cluster.StartNode(*node);
    if (!n.Check(s.ok(), "started " + node->name, s.message())) return 1;
  }
  for (const DemoNode* node : {&kNodeA, &kNodeB}) {
    s = cluster.WaitForNode(*node);
    if (!n.Check(s.ok(), node->name + " published its GPUs", s.message())) return 1;
  }
  n.Say(
      "Two nodes, each a fake kubelet plus `tessera node` over its own simulated driver "
      "(simgpu). The node agents found these GPUs through NVML and registered device plugins:");
  Story story(cluster, n);
  story.Nodes();
  KubeSchedulerStandIn kube_scheduler(cluster.api_url(), cluster.scheduler_url(),
                                      {kNodeA.name, kNodeB.name}, "tessera");
  kube_scheduler.Start();
  n.Say(
      "There is no real kube-scheduler here: a small loop in the demo stands in for it. For "
      "every unbound pod with schedulerName tessera it calls the extender's filter, prioritize "
      "and bind, as kube-scheduler's `tessera` profile would.");

  n.Step("A vGPU (HAMi) pod: nvidia.com/gpu 1, gpumem 4096 MiB, gpucores 30%");
  story.DialectPod("vgpu-pod.yaml", "vgpu-demo", 4096, 30);
  n.Step("A vcuda (TKEStack) pod like the seed's test pod: vcuda-core 50, vcuda-memory 16");
  story.DialectPod("vcuda-pod.yaml", "vcuda-demo", 4096, 50);
  n.Step("A gpushare (Aliyun) pod: aliyun.com/gpu-mem 32 GiB");
  story.DialectPod("gpushare-pod.yaml", "gpushare-demo", 32768, 0);
  n.Step("An invalid request: tencent.com/vcuda-core 150");
  story.InvalidPod();
  n.Step("95 vcuda-memory units (24320 MiB) on a SimGPU-3090 (24268 MiB)");
  story.PendingPod();
  kube_scheduler.Stop();
  n.Step("What kubectl tessera inspect shows");
  story.Inspect();
  return n.failures() == 0 ? 0 : 1;
}

}  // namespace

int RunDemo(std::ostream& out) {
  Narrator n(out);
  Result<DemoPaths> paths = FindDemoPaths();
  if (!paths.ok()) {
    out << "tessera demo: " << paths.status().message() << "\n";
    return 1;
  }
  char tmpl[] = "/tmp/tessera-demo.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    out << "tessera demo: cannot create a folder under /tmp\n";
    return 1;
  }
  std::string workdir = tmpl;
  auto start = std::chrono::steady_clock::now();
  int rc;
  {
    ProcessGroup group;
    ProcessGroup::InstallSignalCleanup();
    DemoCluster cluster(*paths, workdir, group);
    rc = Run(cluster, n);
    group.StopAll();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char took[64];
  std::snprintf(took, sizeof(took), "%.1f", seconds);
  if (rc == 0) {
    out << "\nThe demo ran in " << took << " s; every step happened as told, and every process it "
        << "started has been stopped.\n";
    fs::remove_all(workdir);
  } else {
    out << "\nThe demo FAILED (" << n.failures() << " check(s) did not hold) after " << took
        << " s; every process it started has been stopped. Logs: " << workdir << "/logs\n";
  }
  return rc;
}

}  // namespace tessera::demo
