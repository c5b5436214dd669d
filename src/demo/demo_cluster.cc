#include "demo/demo_cluster.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include "demo/http_json.h"

#ifndef TESSERA_EXAMPLES_DIR
#error "TESSERA_EXAMPLES_DIR must name the examples/ folder"
#endif

namespace tessera::demo {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls `ready` every 100 ms until it returns true or `seconds` pass.
bool WaitFor(int seconds, const std::function<bool()>& ready) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ready();
}

// A free TCP port on 127.0.0.1 (the kernel's pick), released for the scheduler to take.
Result<int> FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Internal("socket failed");
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return Internal("cannot find a free port on 127.0.0.1");
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

Status Failed(const std::string& part, const std::string& log, const std::string& what) {
  return Unavailable(part + " " + what + "; its log " + log + " ends with:\n" + ReadFile(log));
}

}  // namespace

Result<DemoPaths> FindDemoPaths() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Internal("cannot find the tessera binary: " + ec.message());
  fs::path bin = self.parent_path();
  fs::path build = bin.parent_path();
  DemoPaths p{.bin_dir = bin.string(),
              .hook_library = (build / "lib" / "libtessera-cuda.so").string(),
              .simgpu_lib_dir = (build / "lib" / "simgpu").string(),
              .examples_dir = TESSERA_EXAMPLES_DIR};
  std::string missing;
  for (const std::string& f :
       {p.bin_dir + "/tessera-fake-apiserver", p.bin_dir + "/tessera-fake-kubelet",
        p.bin_dir + "/tessera-demo-workload", p.hook_library, p.simgpu_lib_dir + "/libcuda.so.1",
        p.simgpu_lib_dir + "/libnvidia-ml.so.1", p.examples_dir + "/vgpu-pod.yaml"}) {
    if (!fs::exists(f)) missing += "\n  " + f;
  }
  bool kubectl = false;
  const char* path_env = std::getenv("PATH");
  std::stringstream path_list(path_env == nullptr ? "" : path_env);
  for (std::string dir; std::getline(path_list, dir, ':');) {
    kubectl = kubectl || (!dir.empty() && ::access((dir + "/kubectl").c_str(), X_OK) == 0);
  }
  if (!kubectl)
    missing += "\n  kubectl on PATH (scripts/setup installs Debian's kubernetes-client)";
  if (!missing.empty()) {
    return FailedPrecondition(
        "the demo needs these, which are missing (run `make demo`, or build "
        "all targets first):" +
        missing);
  }
  return p;
}

std::string DemoNode::SimgpuDevices() const {
  return "count=" + std::to_string(gpu_count) + ",memory=" + std::to_string(memory_mib) +
         "MiB,sms=" + std::to_string(sms) + ",model=" + model;
}

DemoCluster::DemoCluster(DemoPaths paths, std::string workdir, ProcessGroup& group)
    : paths_(std::move(paths)), workdir_(std::move(workdir)), group_(group) {
  fs::create_directories(logs_dir());
  fs::create_directories(out_dir());
}

std::string DemoCluster::scheduler_url() const {
  return "http://127.0.0.1:" + std::to_string(scheduler_port_);
}

Status DemoCluster::StartApiServer() {
  ASSIGN_OR_RETURN(scheduler_port_, FreePort());
  std::string log = logs_dir() + "/apiserver.log";
  ASSIGN_OR_RETURN(pid_t pid, group_.Spawn({paths_.bin_dir + "/tessera-fake-apiserver", "--listen",
                                            "127.0.0.1:0", "--admission-webhook", scheduler_url()},
                                           {}, log));
  std::smatch m;
  std::regex listening("listening on (http://127\\.0\\.0\\.1:[0-9]+)");
  bool up = WaitFor(20, [&] {
    std::string text = ReadFile(log);
    if (std::regex_search(text, m, listening)) {
      api_url_ = m[1];
      return true;
    }
    return !group_.Alive(pid);
  });
  if (!up || api_url_.empty()) return Failed("the fake API server", log, "did not start");
  kubeconfig_ = workdir_ + "/kubeconfig";
  std::ofstream(kubeconfig_) << "apiVersion: v1\nkind: Config\n"
                             << "clusters: [{name: demo, cluster: {server: \"" << api_url_
                             << "\"}}]\n"
                             << "users: [{name: demo, user: {}}]\n"
                             << "contexts: [{name: demo, context: {cluster: demo, user: demo, "
                                "namespace: default}}]\n"
                             << "current-context: demo\n";
  return Status::Ok();
}

Status DemoCluster::StartScheduler() {
  std::string log = logs_dir() + "/scheduler.log";
  ASSIGN_OR_RETURN(pid_t pid, group_.Spawn({paths_.bin_dir + "/tessera", "scheduler",
                                            "--kubeconfig", kubeconfig_, "--listen",
                                            "127.0.0.1:" + std::to_string(scheduler_port_)},
                                           {}, log));
  HttpJson scheduler(scheduler_url());
  bool ready = WaitFor(30, [&] {
    if (!group_.Alive(pid)) return true;
    return scheduler.Get("/readyz").ok();
  });
  if (!ready || !group_.Alive(pid)) return Failed("tessera scheduler", log, "did not get ready");
  return Status::Ok();
}

std::string DemoCluster::ContainerCommand() const {
  std::string out = out_dir();
  return "id=$(basename \"$(dirname \"$TESSERA_LIMITS_FILE\")\"); f=" + out +
         "/$id.txt; if grep -q '^devices=[1-9]' \"$TESSERA_LIMITS_FILE\"; then LD_LIBRARY_PATH=" +
         paths_.simgpu_lib_dir + " LD_PRELOAD=" + paths_.hook_library + " " + paths_.bin_dir +
         "/tessera-demo-workload >\"$f.tmp\" 2>&1; echo \"exit=$?\" >>\"$f.tmp\"; else echo "
         "'no GPU' >\"$f.tmp\"; fi; mv \"$f.tmp\" \"$f\"; exec tail --pid=$PPID -f /dev/null";
}

Status DemoCluster::StartNode(const DemoNode& node) {
  std::string dir = workdir_ + "/" + node.name;
  fs::create_directories(dir + "/logs");
  std::map<std::string, std::string> env = {{"SIMGPU_STATE", dir + "/simgpu"},
                                            {"SIMGPU_DEVICES", node.SimgpuDevices()}};
  RETURN_IF_ERROR(group_
                      .Spawn({paths_.bin_dir + "/tessera-fake-kubelet", "--dir", dir + "/kubelet",
                              "--node", node.name, "--kubeconfig", kubeconfig_, "--command",
                              ContainerCommand(), "--log-dir", dir + "/logs"},
                             env, logs_dir() + "/" + node.name + "-kubelet.log")
                      .status());
  // As on a real node, kubelet serves before the agent looks for it.
  std::string socket = dir + "/kubelet/device-plugins/kubelet.sock";
  if (!WaitFor(20, [&] { return fs::exists(socket); })) {
    return Failed("the fake kubelet of " + node.name, logs_dir() + "/" + node.name + "-kubelet.log",
                  "did not create " + socket);
  }
  RETURN_IF_ERROR(group_
                      .Spawn({paths_.bin_dir + "/tessera", "node", "--node-name", node.name,
                              "--kubelet-dir", dir + "/kubelet", "--cdi-dir", dir + "/cdi",
                              "--state-dir", dir + "/state", "--kubeconfig", kubeconfig_,
                              "--node.nvml-library", paths_.simgpu_lib_dir + "/libnvidia-ml.so.1",
                              "--node.library-path", paths_.hook_library},
                             env, logs_dir() + "/" + node.name + "-agent.log")
                      .status());
  return Status::Ok();
}

Status DemoCluster::WaitForNode(const DemoNode& node) {
  HttpJson api(api_url_);
  bool ready = WaitFor(40, [&] {
    Result<json> n = api.Get("/api/v1/nodes/" + node.name);
    if (!n.ok()) return false;
    std::string gpus =
        (*n)["metadata"].value("annotations", json::object()).value("tessera.io/gpus", "");
    json inventory = json::parse(gpus, nullptr, false);
    if (inventory.is_discarded() || !inventory.contains("gpus")) return false;
    const json& alloc = (*n)["status"].value("allocatable", json::object());
    return inventory["gpus"].size() == static_cast<size_t>(node.gpu_count) &&
           alloc.contains("tencent.com/vcuda-core");
  });
  if (!ready) {
    return Failed("node " + node.name, logs_dir() + "/" + node.name + "-agent.log",
                  "did not publish " + std::to_string(node.gpu_count) + " GPUs within 40 s");
  }
  return Status::Ok();
}

}  // namespace tessera::demo
