#include "demo/demo_story.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "demo/command_runner.h"
#include "demo/demo_cluster.h"
#include "demo/example_pod.h"
#include "demo/leftover_processes.h"
#include "demo/narrator.h"
#include "demo/signal_cleanup.h"

namespace tessera::demo {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kNet = 251;  // 10.251.0.0/16; the CTest fixture's cluster uses 250
constexpr int kCudaErrorOutOfMemory = 2;
constexpr double kComputeTolerance = 5.0;  // percentage points over the share
constexpr double kDemoLimitSeconds = 120;  // the demo's promise: under 2 minutes

// The dev cluster's default nodes (testing/cluster/tessera-dev-cluster): an RTX 3090's memory as
// NVML reports it, and an H200's 141 GiB.
struct DemoNode {
  std::string name;
  std::string model;
  int memory_mib;
  int gpu_count;
};
const DemoNode kNodeA{
    .name = "node-a", .model = "SimGPU-3090", .memory_mib = 24268, .gpu_count = 2};
const DemoNode kNodeB{
    .name = "node-b", .model = "SimGPU-H200", .memory_mib = 141 * 1024, .gpu_count = 4};

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

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s);
  return buf;
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

// j[key] when it is an array, else an empty one.
const json& Items(const json& j, const char* key) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

// The annotation `key` of an object, parsed as JSON (discarded when absent or not JSON).
json AnnotationJson(const json& object, const char* key) {
  return json::parse(Text(Member(Member(object, "metadata"), "annotations"), key), nullptr, false);
}

// The first element of j[key] when it is a non-empty array of objects, else an empty object.
const json& First(const json& j, const char* key) {
  static const json empty = json::object();
  const json& items = Items(j, key);
  return !items.empty() && items[0].is_object() ? items[0] : empty;
}

// The message of the pod's PodScheduled=False condition, or "".
std::string UnschedulableMessage(const json& pod) {
  for (const json& c : Items(Member(pod, "status"), "conditions")) {
    if (Text(c, "type") == "PodScheduled" && Text(c, "status") == "False") {
      return Text(c, "message");
    }
  }
  return "";
}

// True when the pod's first container runs (started, not ended).
bool ContainerRunning(const json& pod) {
  const json& status = First(Member(pod, "status"), "containerStatuses");
  return Member(status, "state").contains("running");
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

// "4096 MiB, 30% cores" or "32768 MiB, no compute limit": a pod's line in `inspect -d`.
std::string InspectShare(const PodStep& step) {
  return "default/" + step.pod + " (main): " + std::to_string(step.memory_mib) + " MiB, " +
         (step.cores == 0 ? std::string("no compute limit")
                          : std::to_string(step.cores) + "% cores");
}

// "nvidia.com/gpu=1, nvidia.com/gpumem=4096": a container's limits.
std::string Limits(const json& pod) {
  std::string out;
  for (const json& c : Items(Member(pod, "spec"), "containers")) {
    for (const auto& [name, value] : Member(Member(c, "resources"), "limits").items()) {
      out += (out.empty() ? "" : ", ") + name + "=" +
             (value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  return out;
}

class Story {
 public:
  Story(DemoCluster& cluster, Narrator& n, std::string pods_dir)
      : cluster_(cluster), n_(n), pods_dir_(std::move(pods_dir)) {}

  // Tells each node's GPUs and kubelet's counts, and checks them against the node's simgpu machine.
  void Nodes() {
    for (const DemoNode* node : {&kNodeA, &kNodeB}) {
      Result<json> n = cluster_.GetJson({"node", node->name});
      json inv = n.ok() ? AnnotationJson(*n, "tessera.io/gpus") : json();
      json alloc = n.ok() ? Member(Member(*n, "status"), "allocatable") : json::object();
      int matching = 0;
      for (const json& g : Items(inv, "gpus")) {
        matching += g.is_object() && Text(g, "model") == node->model &&
                    g.value("memoryMiB", 0) == node->memory_mib;
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

  // examples/<file> as the cluster can run it (example_pod.h), written to the pods folder;
  // returns its path, or "" after a FAILED line.
  std::string PreparePod(const std::string& file, json* pod_out = nullptr) {
    CommandResult dry = cluster_.Kubectl({"create", "--dry-run=client", "-o", "json", "-f",
                                          cluster_.paths().examples_dir + "/" + file});
    json pod = json::parse(dry.output, nullptr, false);
    if (dry.rc != 0 || !pod.is_object()) {
      n_.Check(false, "kubectl read examples/" + file + " (create --dry-run=client -o json)",
               "exit " + std::to_string(dry.rc) + ": " + dry.output);
      return "";
    }
    pod = ClusterPod(pod);
    std::string path = pods_dir_ + "/" + Text(Member(pod, "metadata"), "name") + ".json";
    std::ofstream(path) << pod.dump(2) << "\n";
    if (pod_out != nullptr) *pod_out = pod;
    return path;
  }

  // Creates the pod of `step` and follows it to its container's program; checks the decision,
  // what the program saw and the compute share it got against what the step tells.
  void DialectPod(const PodStep& step) {
    json pod;
    std::string path = PreparePod(step.file, &pod);
    if (path.empty()) return;
    n_.Say("examples/" + step.file +
           ", read with kubectl create --dry-run=client -o json and changed as told in step 1; "
           "its GPU limits, unchanged: " +
           Limits(pod));
    n_.Say("$ kubectl create -f " + path);
    CommandResult created = cluster_.Kubectl({"create", "-f", path});
    n_.Quote(created.output);
    if (!n_.Check(created.rc == 0, "kubectl created the pod",
                  "exit " + std::to_string(created.rc))) {
      return;
    }
    // Bound, Running, the Scheduled event recorded and the program's end in its log.
    json p;
    std::string logs;
    json scheduled;
    auto deadline = Clock::now() + std::chrono::seconds(90);
    while (Clock::now() < deadline) {
      Result<json> got = cluster_.GetJson({"pod", step.pod});
      if (got.ok()) p = *got;
      if (scheduled.empty() && !Text(Member(p, "spec"), "nodeName").empty()) {
        Result<json> events =
            cluster_.GetJson({"events", "--field-selector",
                              "involvedObject.name=" + step.pod + ",reason=Scheduled"});
        if (events.ok()) scheduled = First(*events, "items");
      }
      if (ContainerRunning(p)) {
        CommandResult log = cluster_.Kubectl({"logs", step.pod});
        if (log.rc == 0) logs = log.output;
      }
      if (logs.find("exit=") != std::string::npos && !scheduled.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    const json& spec = Member(p, "spec");
    n_.Check(Text(spec, "schedulerName") == "tessera",
             "the admission webhook set schedulerName: tessera when the pod was created",
             "schedulerName is '" + Text(spec, "schedulerName") + "'");
    std::string node = Text(spec, "nodeName");
    if (!n_.Check(!node.empty(), "kube-scheduler bound the pod to a node",
                  "still unbound after 90 s: " + UnschedulableMessage(p))) {
      return;
    }
    bound_[step.pod] = node;
    n_.Say(
        "kube-scheduler (profile tessera) asked Tessera's extender: filter -> prioritize -> "
        "bind. Its event: \"" +
        Text(scheduled, "message") + "\"");
    n_.Check(Text(scheduled, "reportingComponent") == "tessera",
             "the Scheduled event comes from the kube-scheduler of profile tessera",
             "reported by '" + Text(scheduled, "reportingComponent") + "'");
    const json decision = AnnotationJson(p, "tessera.io/allocation");
    const json& container = First(decision, "containers");
    const json& device = First(container, "devices");
    int mib = device.value("memoryMiB", 0);
    int cores = device.value("cores", 0);
    int cores_limit = device.value("coresLimit", 0);
    std::string mode = Text(container, "mode");
    n_.Say("Tessera's decision (annotation tessera.io/allocation): " + node + ", GPU " +
           GpuName(node, Text(device, "uuid")) + ": " + std::to_string(mib) + " MiB, " +
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
    if (!n_.Check(ContainerRunning(p) && logs.find("exit=") != std::string::npos,
                  "kubelet admitted it through Tessera's device plugin (Allocate, "
                  "PreStartContainer) and containerd runs its container",
                  "phase " + Text(Member(p, "status"), "phase") + ", log: " + logs)) {
      return;
    }
    WorkloadReport report = ParseReport(logs);
    n_.Say("$ kubectl logs " + step.pod +
           "   (tessera-demo-workload, under libtessera-cuda.so over simgpu)");
    n_.Quote(logs);
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
    Result<json> n = cluster_.GetJson({"node", node});
    if (!n.ok()) return uuid;
    const json inventory = AnnotationJson(*n, "tessera.io/gpus");
    for (const json& g : Items(inventory, "gpus")) {
      if (Text(g, "uuid") == uuid) {
        return std::to_string(g.value("index", -1)) + " (" + Text(g, "model") + ", " +
               uuid.substr(0, 12) + "...)";
      }
    }
    return uuid;
  }

  void InvalidPod() {
    std::string path = PreparePod("vcuda-invalid-core.yaml");
    if (path.empty()) return;
    n_.Say("$ kubectl create -f " + path + "   (examples/vcuda-invalid-core.yaml)");
    CommandResult created = cluster_.Kubectl({"create", "-f", path});
    n_.Quote(created.output);
    const std::string& o = created.output;
    n_.Check(created.rc != 0 && o.find("denied the request") != std::string::npos &&
                 o.find("vcuda-core: 150") != std::string::npos &&
                 o.find("below 100") != std::string::npos &&
                 o.find("multiple of 100") != std::string::npos,
             "the API server's call to the admission webhook denied the pod, and the message says "
             "what is allowed (below 100, or a multiple of 100)");
    CommandResult get = cluster_.Kubectl({"get", "pod", "vcuda-150-cores"});
    n_.Check(get.rc != 0 && get.output.find("NotFound") != std::string::npos,
             "the pod does not exist", get.output);
  }

  void PendingPod() {
    std::string path = PreparePod("vcuda-95-units.yaml");
    if (path.empty()) return;
    n_.Say("$ kubectl create -f " + path + "   (examples/vcuda-95-units.yaml)");
    CommandResult created = cluster_.Kubectl({"create", "-f", path});
    n_.Quote(created.output);
    if (!n_.Check(created.rc == 0, "kubectl created the pod")) return;
    std::string message;
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (message.empty() && Clock::now() < deadline) {
      Result<json> got = cluster_.GetJson({"pod", "vcuda-95-units"});
      if (got.ok()) message = UnschedulableMessage(*got);
      if (message.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    n_.Say(
        "Tessera's filter found no node. kube-scheduler records why on the pod (condition "
        "PodScheduled=False, reason Unschedulable), one reason per node from the extender:");
    n_.Quote(message);
    n_.Check(message.find("24320 MiB") != std::string::npos &&
                 message.find("24268 MiB") != std::string::npos,
             "the reason names the 24320 MiB asked and the 24268 MiB a card has",
             message.empty() ? "no PodScheduled=False condition after 30 s" : "");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    Result<json> later = cluster_.GetJson({"pod", "vcuda-95-units"});
    n_.Check(later.ok() && Text(Member(*later, "spec"), "nodeName").empty() &&
                 Text(Member(*later, "status"), "phase") == "Pending",
             "1.5 s later the pod is still Pending and unbound");
  }

  // `kubectl get pods -o wide`, and the check that the three pods run where they were bound.
  void Pods(const std::vector<const PodStep*>& pods) {
    n_.Say(
        "Each program has ended, but its container sleeps on (exec sleep 3600): the pods stay "
        "Running on their nodes, and keep their GPU shares.");
    n_.Say("$ kubectl get pods -o wide");
    CommandResult shown = cluster_.Kubectl({"get", "pods", "-o", "wide"});
    n_.Quote(shown.output);
    Result<json> list = cluster_.GetJson({"pods"});
    std::map<std::string, const json*> by_name;
    if (list.ok()) {
      for (const json& p : Items(*list, "items")) by_name[Text(Member(p, "metadata"), "name")] = &p;
    }
    std::string where, wrong;
    for (const PodStep* step : pods) {
      auto it = by_name.find(step->pod);
      std::string node = it == by_name.end() ? "" : Text(Member(*it->second, "spec"), "nodeName");
      std::string phase = it == by_name.end() ? "" : Text(Member(*it->second, "status"), "phase");
      std::string want = step->node.empty() ? bound_[step->pod] : step->node;
      where += (where.empty() ? "" : ", ") + step->pod + " on " + want;
      if (want.empty() || node != want || phase != "Running" || !ContainerRunning(*it->second)) {
        wrong += (wrong.empty() ? "" : "; ") + step->pod + ": " + (phase.empty() ? "?" : phase) +
                 " on " + (node.empty() ? "no node" : node);
      }
    }
    n_.Check(list.ok() && wrong.empty(), "the three pods are Running: " + where,
             list.ok() ? wrong : list.status().message());
    auto pending = by_name.find("vcuda-95-units");
    n_.Check(pending != by_name.end() &&
                 Text(Member(*pending->second, "status"), "phase") == "Pending" &&
                 Text(Member(*pending->second, "spec"), "nodeName").empty(),
             "vcuda-95-units is Pending, on no node");
  }

  void Inspect(const std::vector<const PodStep*>& pods) {
    n_.Say("$ kubectl tessera inspect -d   (KUBECONFIG: the cluster's admin, client certificate)");
    CommandResult shown = cluster_.Kubectl({"tessera", "inspect", "-d"});
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
                 o.find("default/vcuda-95-units: 0/2 nodes are available") != std::string::npos &&
                 o.find("24320 MiB") != std::string::npos,
             "inspect shows both nodes, each pod's share on its GPU, and the pending pod with its "
             "reason",
             "exit " + std::to_string(shown.rc) + (missing.empty() ? "" : "; " + missing));

    // The same command, reading the scheduler's own state instead of the API server.
    std::vector<std::string> one_node = {"tessera",
                                         "inspect",
                                         kNodeA.name,
                                         "-d",
                                         "--scheduler",
                                         cluster_.scheduler_url(),
                                         "--inspect.scheduler-ca=" + cluster_.scheduler_ca_file()};
    std::string shown_args;
    for (const std::string& a : one_node) shown_args += " " + a;
    n_.Say(
        "The same from the scheduler's memory (GET /inspect over HTTPS, its certificate "
        "checked against the cluster's CA), for one node:");
    n_.Say("$ kubectl" + shown_args);
    CommandResult scheduler = cluster_.Kubectl(one_node);
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
                 " holds the same pods with the same shares, and only that node",
             "exit " + std::to_string(scheduler.rc));
  }

  // The web page of the cluster's GPUs (docs/ui.md), which the dev cluster's scheduler serves
  // under /ui/ (scheduler.ui.enabled): fetched once, as a browser would.
  void WebPage() {
    n_.Say(
        "The scheduler also serves a read-only web page of the cluster's GPUs (docs/ui.md): the "
        "nodes, their GPUs and the shares on each as bars of memory and cores, and the pending "
        "pods, read from its GET /inspect every few seconds. It is off by default "
        "(scheduler.ui.enabled); the dev cluster turns it on.");
    n_.Say("$ curl --cacert " + cluster_.scheduler_ca_file() + " " + cluster_.scheduler_url() +
           "/ui/");
    Result<DemoCluster::HttpAnswer> page = cluster_.GetFromScheduler("/ui/");
    std::string detail;
    if (!page.ok()) {
      detail = page.status().message();
    } else {
      detail = "HTTP " + std::to_string(page->status) + ", " + page->content_type;
      n_.Quote(detail + ", " + std::to_string(page->body.size()) + " bytes");
    }
    n_.Check(
        page.ok() && page->status == 200 && page->content_type.rfind("text/html", 0) == 0 &&
            page->body.find("<title>" + std::string(kPageTitle) + "</title>") != std::string::npos,
        "the scheduler serves the web page at " + cluster_.scheduler_url() +
            "/ui/ (HTTP 200, text/html, titled \"" + kPageTitle + "\")",
        detail);
  }

 private:
  // The title of src/ui/assets/index.html.
  static constexpr char kPageTitle[] = "Tessera: GPUs of the cluster";

  DemoCluster& cluster_;
  Narrator& n_;
  const std::string pods_dir_;
  std::map<std::string, std::string> bound_;  // pod -> the node it was bound to
};

std::string Command(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) {
    bool plain = a.find_first_of(" '\"$;&|") == std::string::npos;
    line += (line.empty() ? "" : " ") + (plain ? a : ShellQuote(a));
  }
  return line;
}

// Steps 1 to 9; returns false when the cluster did not come up (the story stops there).
bool Run(DemoCluster& cluster, Narrator& n, const std::string& pods_dir) {
  const std::string net = std::to_string(cluster.net());
  n.Step("Starting a real Kubernetes cluster on this machine");
  n.Say("$ testing/cluster/tessera-dev-cluster up --dir " + cluster.dir() + " --net " + net +
        " --build " + cluster.paths().build_dir);
  CommandResult up = cluster.Up([&n](const std::string& line) { n.Quote(line); });
  if (!n.Check(up.rc == 0, "the cluster is up",
               "exit " + std::to_string(up.rc) + (up.timed_out ? ", timed out" : "") +
                   "; its logs: " + cluster.logs_dir())) {
    return false;
  }
  n.Say(
      "Nothing here is a fake but the GPUs. The upstream programs of Kubernetes 1.36 run as "
      "they do on any cluster (docs/dev-cluster.md):");
  n.Say("- etcd, and kube-apiserver at " + cluster.api_url() +
        " (TLS, client certificates, RBAC); kubectl talks to it as the cluster's admin;");
  n.Say("- kube-controller-manager, and the default kube-scheduler for pods without a GPU;");
  n.Say(
      "- a second kube-scheduler with the profile `tessera` (deploy/scheduler/"
      "kube-scheduler-config.yaml), which calls Tessera's scheduler extender over HTTPS;");
  n.Say("- tessera scheduler at " + cluster.scheduler_url() +
        " (certificate signed by the cluster's CA): the extender (filter, prioritize, bind) and "
        "the admission webhooks (mutate, validate) the API server calls for every new pod;");
  n.Say(
      "- two nodes, each in its own network namespace with a real containerd and kubelet, "
      "plus `tessera node` (the device plugins) over a simulated GPU driver (simgpu).");
  n.Say(
      "The node agents found these GPUs through NVML and registered their device plugins with "
      "kubelet:");
  Story story(cluster, n, pods_dir);
  story.Nodes();
  n.Say(
      "The pods come from examples/, which name CUDA images that cannot be pulled here and ask "
      "for 4 CPUs and 32 GiB, more than this machine has. The demo changes each as the cluster "
      "tests do (testing/cluster/tests/lib.sh): the same name, annotations and GPU requests; "
      "image " +
      std::string(kWorkloadImage) + "; command " + Command(WorkloadCommand()) +
      " (the container runs on after its GPU program, so the pod keeps its share); no cpu or "
      "memory requests. They are written to " +
      pods_dir + ".");

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
  n.Step("The pods, as kubectl shows them");
  story.Pods({&kVgpuPod, &kVcudaPod, &kGpusharePod});
  n.Step("What kubectl tessera inspect shows");
  story.Inspect({&kVgpuPod, &kVcudaPod, &kGpusharePod});
  n.Step("The web page of the cluster's GPUs");
  story.WebPage();
  return true;
}

// Checks `down`'s answer: it exits 1 and names what it found when anything is left.
bool CheckDown(Narrator& n, const CommandResult& down, bool final) {
  bool clean = down.rc == 0 && down.output.find("left behind") == std::string::npos;
  std::string what =
      "the cluster is down, and `down` found nothing left behind (process, mount, "
      "cgroup, network namespace, tsr251br)";
  if (final) {
    n.FinalQuote(down.output);
    n.Final(clean ? "ok: " + what : "FAILED: " + what + " (exit " + std::to_string(down.rc) + ")");
    return clean;
  }
  n.Quote(down.output);
  return n.Check(clean, what, "exit " + std::to_string(down.rc));
}

// The demo's last words: where the web page was, and how to open it on a cluster that stays up
// (the demo's own is down by now).
void PrintWebPageAddress(Narrator& n, const DemoCluster& cluster) {
  const std::string harness = cluster.paths().harness;
  n.Print("\nThe web page of the cluster's GPUs was at " + cluster.scheduler_url() +
          "/ui/ while the demo's cluster ran. To open it in a browser, start a dev cluster that "
          "stays up (docs/dev-cluster.md) and create pods in it:\n"
          "  sudo " +
          harness +
          " up\n"
          "  then open https://10.250.0.1:8443/ui/ on this machine (the scheduler's address with "
          "up's default --net 250; its certificate is signed by the cluster's CA, "
          "/tmp/tessera-dev-cluster/tessera-certs/ca.crt with up's default --dir: import it into "
          "the browser, or accept the warning)\n"
          "  sudo " +
          harness +
          " down\n"
          "On a cluster installed with the chart (--set scheduler.ui.enabled=true):\n"
          "  kubectl -n tessera-system port-forward deploy/tessera-scheduler 8443\n"
          "  then open https://localhost:8443/ui/ (docs/ui.md)");
}

}  // namespace

int RunDemo(std::ostream& out) {
  Narrator n(out);
  Result<DemoPaths> paths = FindDemoPaths();
  if (!paths.ok()) {
    out << "tessera demo: " << paths.status().message() << "\n";
    return 1;
  }
  if (::geteuid() != 0) {
    out << "tessera demo: the demo runs a Kubernetes cluster on this machine, which needs root "
           "(network namespaces, cgroups, mounts): sudo "
        << paths->bin_dir << "/tessera demo\n";
    return 1;
  }
  // Under /tmp rather than $TMPDIR: a unix socket's path may not exceed 107 bytes, and the
  // cluster's sockets live in this folder.
  char tmpl[] = "/tmp/tessera-demo.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    out << "tessera demo: cannot create " << tmpl << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  const std::string workdir = tmpl;
  const std::string pods_dir = workdir + "/pods";
  fs::create_directories(pods_dir);
  CommandRunner runner;
  DemoCluster cluster(*paths, workdir + "/cluster", kNet, runner);
  out << "The demo works in " << workdir << " (the cluster's logs: " << cluster.logs_dir()
      << ").\nShould it be killed, take its cluster down with: " << paths->harness << " down --dir "
      << cluster.dir() << "\n";

  OnTerminatingSignal([&](int sig) {
    n.Silence();
    n.Final("");
    n.Final(std::string("Stopped by ") + SignalName(sig) + ": taking the cluster down (" +
            paths->harness + " down)");
    // A running `up` gets SIGTERM and 5 s to take down what it started (its own cleanup); then
    // SIGKILL. `down` does the whole job either way, from what `up` recorded in the folder.
    runner.Stop(std::chrono::seconds(5));
    CheckDown(n, cluster.Down(), true);
    n.Final("Logs: " + cluster.logs_dir());
  });
  // Whichever way this function returns, a cleanup that began keeps `cluster`, `runner` and `n`
  // alive until it ends the process (returning under it, an interrupted demo aborted with
  // std::system_error on a destroyed mutex instead of exiting 130).
  SignalCleanupScope cleanup_scope;

  Status components = cluster.FindComponents([&n](const std::string& line) { n.Quote(line); });
  if (!n.Check(components.ok(),
               "the cluster's programs are built (testing/cluster/build-components)",
               components.message())) {
    fs::remove_all(workdir);
    return 1;
  }
  auto start = Clock::now();
  Run(cluster, n, pods_dir);

  n.Step("Taking the cluster down");
  n.Say("$ testing/cluster/tessera-dev-cluster down --dir " + cluster.dir() + " --net " +
        std::to_string(cluster.net()));
  CheckDown(n, cluster.Down(), false);
  std::string left;
  for (const std::string& p : LeftoverProcesses(workdir, std::chrono::seconds(5))) {
    left += "\n     " + p;
  }
  n.Check(left.empty(), "no process that names the demo's folder is running",
          "still running:" + left);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  n.Check(seconds < kDemoLimitSeconds,
          "the demo ran in " + Seconds(seconds) + " s, under its limit of 2 minutes");
  if (n.failures() == 0) {
    n.Print("\nEvery step happened as told.");
    PrintWebPageAddress(n, cluster);
    fs::remove_all(workdir);
    return 0;
  }
  n.Print("\nThe demo FAILED: " + std::to_string(n.failures()) +
          " check(s) did not hold (marked FAILED above). Logs: " + cluster.logs_dir());
  return 1;
}

}  // namespace tessera::demo
