#include "demo/demo_story.h"

#include <stdio.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "demo/demo_cluster.h"
#include "demo/http_json.h"
#include "demo/kube_scheduler_stand_in.h"
#include "demo/leftover_processes.h"
#include "demo/narrator.h"

namespace tessera::demo {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kCudaErrorOutOfMemory = 2;
constexpr double kComputeTolerance = 5.0;  // percentage points over the share
constexpr double kDemoLimitSeconds = 120;  // the demo's promise: under 2 minutes

// An RTX 3090's memory as NVML reports it, and an H200's 141 GiB.
const DemoNode kNodeA{
    .name = "node-a", .model = "SimGPU-3090", .memory_mib = 24268, .sms = 82, .gpu_count = 2};
const DemoNode kNodeB{
    .name = "node-b", .model = "SimGPU-H200", .memory_mib = 141 * 1024, .sms = 132, .gpu_count = 4};

// The resources kubelet must count on every node (one device plugin per dialect resource).
const char* const kNodeResources[] = {"nvidia.com/gpu", "tencent.com/vcuda-core",
                                      "tencent.com/vcuda-memory", "aliyun.com/gpu-mem"};

// What one dialect's pod must get, as its step tells it.
struct PodStep {
  std::string file;  // in examples/
  std::string pod;
  int memory_mib;
  int cores;             // percent of the GPU; 0: no compute limit
  std::string mode;      // "hard" or "elastic"; "" when the pod has no compute limit
  int cores_limit = 0;   // elastic ceiling (tencent.com/vcuda-core-limit); 0: none
  std::string node;      // the node it must land on; "": any
  std::string node_why;  // why that node, told when it is checked
};

const PodStep kVgpuPod{
    .file = "vgpu-pod.yaml", .pod = "vgpu-demo", .memory_mib = 4096, .cores = 30, .mode = "hard"};
const PodStep kVcudaPod{.file = "vcuda-pod.yaml",
                        .pod = "vcuda-demo",
                        .memory_mib = 16 * 256,
                        .cores = 50,
                        .mode = "elastic",
                        .cores_limit = 50};
const PodStep kGpusharePod{.file = "gpushare-pod.yaml",
                           .pod = "gpushare-demo",
                           .memory_mib = 32 * 1024,
                           .cores = 0,
                           .mode = "",
                           .node = kNodeB.name,
                           .node_why = "32768 MiB fits no SimGPU-3090 (24268 MiB), only an H200"};

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

// j[key] when j is an object holding an object there, else an empty object: the demo reads what
// other processes wrote and must not stop on a missing field.
const json& Member(const json& j, const char* key) {
  static const json empty = json::object();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

// The string at j[key] when there is one, else "".
std::string Text(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The annotation `key` of an object, parsed as JSON (discarded when absent or not JSON).
json AnnotationJson(const json& object, const char* key) {
  return json::parse(Text(Member(Member(object, "metadata"), "annotations"), key), nullptr, false);
}

// The first element of j[key] when it is a non-empty array of objects, else an empty object.
const json& First(const json& j, const char* key) {
  static const json empty = json::object();
  if (!j.is_object() || !j.contains(key) || !j[key].is_array() || j[key].empty()) return empty;
  return j[key][0].is_object() ? j[key][0] : empty;
}

// "4096 MiB, 30% cores" or "32768 MiB, no compute limit": a pod's line in `inspect -d`.
std::string InspectShare(const PodStep& step) {
  return "default/" + step.pod + " (main): " + std::to_string(step.memory_mib) + " MiB, " +
         (step.cores == 0 ? std::string("no compute limit")
                          : std::to_string(step.cores) + "% cores");
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

  // Tells each node's GPUs and kubelet's counts, and checks them against the node's simgpu machine.
  void Nodes() {
    for (const DemoNode* node : {&kNodeA, &kNodeB}) {
      Result<json> n = api_.Get("/api/v1/nodes/" + node->name);
      json inv = n.ok() ? AnnotationJson(*n, "tessera.io/gpus") : json();
      json alloc = n.ok() ? Member(Member(*n, "status"), "allocatable") : json::object();
      int matching = 0;
      if (inv.is_object() && inv.contains("gpus") && inv["gpus"].is_array()) {
        for (const json& g : inv["gpus"]) {
          matching += g.is_object() && Text(g, "model") == node->model &&
                      g.value("memoryMiB", 0) == node->memory_mib;
        }
      }
      std::string counts;
      bool counted = true;
      for (const char* resource : kNodeResources) {
        std::string count = Text(alloc, resource);
        counted = counted && !count.empty() && count != "0";
        counts += (counts.empty() ? "" : ", ") + (count.empty() ? "?" : count) + " " + resource;
      }
      n_.Say(node->name + ": " + std::to_string(matching) + " x " + node->model + " with " +
             std::to_string(node->memory_mib) + " MiB each; kubelet counts " + counts + " devices");
      n_.Check(matching == node->gpu_count && counted,
               node->name + " has " + std::to_string(node->gpu_count) + " " + node->model +
                   " GPUs of " + std::to_string(node->memory_mib) +
                   " MiB, and kubelet counts every dialect's resource",
               n.ok() ? "tessera.io/gpus is " + inv.dump() : n.status().message());
    }
  }

  // Creates the pod of `step` and follows it to its container's program; checks the decision,
  // what the program saw and the compute share it got against what the step tells.
  void DialectPod(const PodStep& step) {
    n_.Say("$ kubectl create -f examples/" + step.file);
    CommandResult created = RunCommand(Kubectl("create -f " + Example(step.file)));
    n_.Quote(created.output);
    if (!n_.Check(created.rc == 0, "kubectl created the pod",
                  "exit " + std::to_string(created.rc))) {
      return;
    }
    json p;
    std::string allocation_id;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(45);
    while (std::chrono::steady_clock::now() < deadline) {
      Result<json> got = api_.Get("/api/v1/namespaces/default/pods/" + step.pod);
      if (got.ok()) {
        p = *got;
        allocation_id =
            Text(Member(AnnotationJson(p, "tessera.io/allocated"), "main"), "allocation");
        if (!allocation_id.empty() &&
            fs::exists(cluster_.out_dir() + "/" + allocation_id + ".txt")) {
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const json& spec = Member(p, "spec");
    n_.Check(Text(spec, "schedulerName") == "tessera",
             "the admission webhook set schedulerName: tessera when the pod was created",
             "schedulerName is '" + Text(spec, "schedulerName") + "'");
    std::string node = Text(spec, "nodeName");
    if (!n_.Check(!node.empty(), "the scheduler bound the pod to a node",
                  "still unbound after 45 s")) {
      return;
    }
    bound_[step.pod] = node;
    const json decision = AnnotationJson(p, "tessera.io/allocation");
    const json& container = First(decision, "containers");
    const json& device = First(container, "devices");
    int mib = device.value("memoryMiB", 0);
    int cores = device.value("cores", 0);
    int cores_limit = device.value("coresLimit", 0);
    std::string mode = Text(container, "mode");
    n_.Say(
        "kube-scheduler (the stand-in) asked the extender: filter -> prioritize -> bind. "
        "Tessera bound it to " +
        node + ", GPU " + GpuName(node, Text(device, "uuid")) + ": " + std::to_string(mib) +
        " MiB, " +
        (cores == 0 ? std::string("no compute limit") : std::to_string(cores) + "% compute") +
        (mode.empty() ? "" : ", mode " + mode) +
        (cores_limit > 0 ? " (may burst to " + std::to_string(cores_limit) + "%)" : ""));
    std::string wanted =
        std::to_string(step.memory_mib) + " MiB and " +
        (step.cores == 0 ? std::string("no compute limit")
                         : std::to_string(step.cores) + "% compute") +
        (step.mode.empty() ? "" : ", " + step.mode) +
        (step.cores_limit > 0 ? " with a ceiling of " + std::to_string(step.cores_limit) + "%"
                              : "");
    n_.Check(mib == step.memory_mib && cores == step.cores && cores_limit == step.cores_limit &&
                 (step.mode.empty() || mode == step.mode),
             "the decision is " + wanted + ", as the pod asked", "decision: " + device.dump());
    if (!step.node.empty()) {
      n_.Check(node == step.node, step.node_why + ": it went to " + step.node,
               "it went to " + node);
    }
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
    n_.Check(Number(report, "nvml.total_mib") == step.memory_mib,
             "NVML (what nvidia-smi shows) reports " + std::to_string(step.memory_mib) +
                 " MiB as the GPU's total memory, not the card's",
             "it reported " + report.values["nvml.total_mib"]);
    double got = Number(report, "oom.allocated_mib");
    n_.Check(Number(report, "oom.error") == kCudaErrorOutOfMemory && got <= step.memory_mib &&
                 got > step.memory_mib - 64,
             "allocations stopped with CUDA_ERROR_OUT_OF_MEMORY at the " +
                 std::to_string(step.memory_mib) + " MiB limit",
             "allocated " + report.values["oom.allocated_mib"] + " MiB, error " +
                 report.values["oom.error"]);
    ComputeShare(step, report);
  }

  // Hard: held to its cores; elastic with a ceiling: held to the ceiling while alone on its GPU
  // (the programs run one after the other). Not starved either: at least half of that.
  void ComputeShare(const PodStep& step, const WorkloadReport& report) {
    double percent = Number(report, "compute.percent");
    std::string measured = report.values.count("compute.percent") != 0
                               ? report.values.at("compute.percent") + "%"
                               : std::string("nothing measured");
    if (step.cores == 0) {
      n_.Say("It used " + measured + " of the GPU's time (this request has no compute limit).");
      return;
    }
    int held_to = step.mode == "hard" ? step.cores : step.cores_limit;
    std::string what = step.mode == "hard" ? "its " + std::to_string(held_to) + "% compute share"
                                           : "its " + std::to_string(held_to) +
                                                 "% burst ceiling (elastic, alone on the GPU)";
    n_.Check(percent >= held_to / 2.0 && percent <= held_to + kComputeTolerance,
             "the program was held to " + what + ", and got it: " + measured + " of the GPU's time",
             "allowed " + std::to_string(held_to / 2) + "% to " +
                 std::to_string(held_to + static_cast<int>(kComputeTolerance)) + "%");
  }

  std::string GpuName(const std::string& node, const std::string& uuid) {
    Result<json> n = api_.Get("/api/v1/nodes/" + node);
    if (!n.ok()) return uuid;
    json inv = AnnotationJson(*n, "tessera.io/gpus");
    if (!inv.is_object() || !inv.contains("gpus") || !inv["gpus"].is_array()) return uuid;
    for (const json& g : inv["gpus"]) {
      if (Text(g, "uuid") == uuid) {
        return std::to_string(g.value("index", -1)) + " (" + Text(g, "model") + ", " +
               uuid.substr(0, 12) + "...)";
      }
    }
    return uuid;
  }

  void InvalidPod() {
    n_.Say("$ kubectl create -f examples/vcuda-invalid-core.yaml");
    CommandResult created = RunCommand(Kubectl("create -f " + Example("vcuda-invalid-core.yaml")));
    n_.Quote(created.output);
    const std::string& o = created.output;
    n_.Check(created.rc != 0 && o.find("denied the request") != std::string::npos &&
                 o.find("vcuda-core: 150") != std::string::npos &&
                 o.find("below 100") != std::string::npos &&
                 o.find("multiple of 100") != std::string::npos,
             "the admission webhook denied the pod, and the message says what is allowed "
             "(below 100, or a multiple of 100)");
    n_.Check(!api_.Get("/api/v1/namespaces/default/pods/vcuda-150-cores").ok(),
             "the pod does not exist");
  }

  void PendingPod() {
    n_.Say("$ kubectl create -f examples/vcuda-95-units.yaml");
    CommandResult created = RunCommand(Kubectl("create -f " + Example("vcuda-95-units.yaml")));
    n_.Quote(created.output);
    if (!n_.Check(created.rc == 0, "kubectl created the pod")) return;
    std::string message;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (message.empty() && std::chrono::steady_clock::now() < deadline) {
      Result<json> got = api_.Get("/api/v1/namespaces/default/pods/vcuda-95-units");
      json status = got.ok() ? Member(*got, "status") : json::object();
      if (status.contains("conditions") && status["conditions"].is_array()) {
        for (const json& c : status["conditions"]) {
          if (Text(c, "type") == "PodScheduled" && Text(c, "status") == "False") {
            message = Text(c, "message");
          }
        }
      }
      if (message.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    n_.Say("The extender's filter found no node; the reason kube-scheduler records on the pod:");
    n_.Quote(message);
    n_.Check(message.find("24320 MiB") != std::string::npos &&
                 message.find("24268 MiB") != std::string::npos,
             "the reason names the 24320 MiB asked and the 24268 MiB a card has",
             message.empty() ? "no PodScheduled=False condition after 30 s" : "");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    Result<json> later = api_.Get("/api/v1/namespaces/default/pods/vcuda-95-units");
    n_.Check(later.ok() && Text(Member(*later, "spec"), "nodeName").empty() &&
                 Text(Member(*later, "status"), "phase") == "Pending",
             "1.5 s later the pod is still Pending and unbound");
  }

  void Inspect(const std::vector<const PodStep*>& pods) {
    n_.Say("$ kubectl tessera inspect -d");
    CommandResult shown = RunCommand(Kubectl("tessera inspect -d"));
    n_.Quote(shown.output);
    const std::string& o = shown.output;
    bool shares = true;
    std::string missing;
    for (const PodStep* p : pods) {
      bool found = o.find(InspectShare(*p)) != std::string::npos;
      shares = shares && found;
      if (!found) missing += (missing.empty() ? "no line " : ", ") + InspectShare(*p);
    }
    n_.Check(shown.rc == 0 && o.find(kNodeA.name + "  ") != std::string::npos &&
                 o.find(kNodeB.name + "  ") != std::string::npos && shares &&
                 o.find("Pending pods: 1\n") != std::string::npos &&
                 o.find("default/vcuda-95-units: 0/2 nodes are available") != std::string::npos,
             "inspect shows both nodes, each pod's share on its GPU, and the pending pod with its "
             "reason",
             "exit " + std::to_string(shown.rc) + (missing.empty() ? "" : "; " + missing));

    // The same command, reading the scheduler's own state instead of the API server.
    std::string one_node =
        "tessera inspect " + kNodeA.name + " -d --scheduler " + cluster_.scheduler_url();
    n_.Say("The same from the scheduler's memory (GET /inspect), for one node:");
    n_.Say("$ kubectl " + one_node);
    CommandResult scheduler = RunCommand(Kubectl(one_node));
    n_.Quote(scheduler.output);
    const std::string& s = scheduler.output;
    bool node_a_pods = true;
    for (const PodStep* p : pods) {
      bool on_a = bound_[p->pod] == kNodeA.name;
      node_a_pods = node_a_pods && on_a == (s.find(InspectShare(*p)) != std::string::npos);
    }
    n_.Check(scheduler.rc == 0 && s.find(kNodeA.name + "  ") != std::string::npos &&
                 s.find(kNodeB.name + "  ") == std::string::npos && node_a_pods,
             "the scheduler's view of " + kNodeA.name +
                 " holds the same pods with the same "
                 "shares, and only that node",
             "exit " + std::to_string(scheduler.rc));
  }

 private:
  DemoCluster& cluster_;
  Narrator& n_;
  HttpJson api_;
  std::map<std::string, std::string> bound_;  // pod -> the node it was bound to
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
  story.DialectPod(kVgpuPod);
  n.Step("A vcuda (TKEStack) pod like the seed's test pod: vcuda-core 50, vcuda-memory 16");
  story.DialectPod(kVcudaPod);
  n.Step("A gpushare (Aliyun) pod: aliyun.com/gpu-mem 32 GiB");
  story.DialectPod(kGpusharePod);
  n.Step("An invalid request: tencent.com/vcuda-core 150");
  story.InvalidPod();
  n.Step("95 vcuda-memory units (24320 MiB) on a SimGPU-3090 (24268 MiB)");
  story.PendingPod();
  kube_scheduler.Stop();
  n.Step("What kubectl tessera inspect shows");
  story.Inspect({&kVgpuPod, &kVcudaPod, &kGpusharePod});
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
  // Under /tmp rather than $TMPDIR: the kubelet and device plugin sockets live in this folder,
  // and a unix socket's path may not exceed 107 bytes.
  char tmpl[] = "/tmp/tessera-demo.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    out << "tessera demo: cannot create " << tmpl << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  const std::string workdir = tmpl;
  out << "The demo works in " << workdir << " (each process's log is in its logs/ folder).\n";
  auto start = std::chrono::steady_clock::now();
  int rc;
  {
    ProcessGroup group;
    ProcessGroup::InstallSignalCleanup();
    DemoCluster cluster(*paths, workdir, group);
    rc = Run(cluster, n);
    group.StopAll();
  }
  out << "\n";
  std::string left;
  for (const std::string& p : LeftoverProcesses(workdir, std::chrono::seconds(5))) {
    left += "\n     " + p;
  }
  n.Check(left.empty(), "every process the demo started has ended", "still running:" + left);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char took[64];
  std::snprintf(took, sizeof(took), "%.1f", seconds);
  n.Check(seconds < kDemoLimitSeconds,
          std::string("the demo ran in ") + took + " s, under its limit of 2 minutes");
  if (rc == 0 && n.failures() == 0) {
    out << "\nEvery step happened as told.\n";
    fs::remove_all(workdir);
    return 0;
  }
  out << "\nThe demo FAILED: " << n.failures()
      << " check(s) did not hold (marked FAILED above). Logs: " << workdir << "/logs\n";
  return 1;
}

}  // namespace tessera::demo
