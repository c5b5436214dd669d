// DemoCluster: the real Kubernetes cluster `tessera demo` runs on, started and taken down with the
// dev cluster's script (testing/cluster/tessera-dev-cluster, docs/dev-cluster.md): etcd,
// kube-apiserver, kube-controller-manager, the default kube-scheduler and a second one with the
// profile `tessera` that calls Tessera's scheduler extender, and per node containerd, kubelet,
// `tessera node` and simgpu's driver. The cluster's processes are detached from the demo (each in
// a session of its own): only Down() ends them, and after a SIGKILL of the demo
// `tessera-dev-cluster down --dir <dir()>` does.
//
// Every program runs through the demo's CommandRunner, so that a signal can stop it.
// Thread-safety: Down() may be called from any thread (the first call takes the cluster down, the
// others wait for it and get its result); everything else from one thread.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "demo/command_runner.h"

namespace tessera::demo {

// Where the build and the checkout keep what the demo needs.
struct DemoPaths {
  std::string build_dir;         // the build of the running `tessera`: the cluster's --build
  std::string bin_dir;           // tessera, kubectl-tessera
  std::string examples_dir;      // the pod YAML files
  std::string harness;           // testing/cluster/tessera-dev-cluster
  std::string build_components;  // testing/cluster/build-components
};

// Finds the build next to the running `tessera` binary (<build>/bin/tessera) and the checkout it
// was built from; an error lists what is missing and says what to do.
Result<DemoPaths> FindDemoPaths();

class DemoCluster {
 public:
  using LineFn = std::function<void(const std::string&)>;

  // `dir`: the cluster's folder (--dir); `net`: N of its addresses 10.N.0.0/16 (--net).
  DemoCluster(DemoPaths paths, std::string dir, int net, CommandRunner& runner);

  // Finds the cluster's upstream programs (kubectl among them); builds them first when they are
  // missing (once per machine, long), handing build-components' progress lines to `on_line`.
  Status FindComponents(const LineFn& on_line);

  // `tessera-dev-cluster up`, its log lines handed to `on_line` as they come.
  CommandResult Up(const LineFn& on_line);

  // `tessera-dev-cluster down`: stops everything and fails (rc 1, "left behind: ...") when
  // anything is left. Runs once; see the top.
  CommandResult Down();

  // kubectl as the cluster's admin (KUBECONFIG), with `kubectl tessera` on its PATH.
  CommandResult Kubectl(const std::vector<std::string>& args);
  // `kubectl get ARGS -o json`, parsed; an error holds kubectl's message.
  Result<nlohmann::json> GetJson(const std::vector<std::string>& args);

  // An answer of the scheduler's HTTPS port.
  struct HttpAnswer {
    int status = 0;            // the HTTP status
    std::string content_type;  // its Content-Type
    std::string body;
  };
  // GET scheduler_url() + `path` with curl, the certificate checked against scheduler_ca_file();
  // Unavailable with curl's message when it gets no answer.
  Result<HttpAnswer> GetFromScheduler(const std::string& path);

  const std::string& dir() const { return dir_; }
  int net() const { return net_; }
  std::string kubeconfig() const { return dir_ + "/kubeconfig/admin.kubeconfig"; }
  // The CA of the scheduler's certificate (tessera certgen's, extracted by the dev cluster).
  std::string scheduler_ca_file() const { return dir_ + "/tessera-certs/ca.crt"; }
  std::string api_url() const { return "https://" + HostIp() + ":6443"; }
  std::string scheduler_url() const { return "https://" + HostIp() + ":8443"; }
  std::string logs_dir() const { return dir_ + "/logs"; }
  const DemoPaths& paths() const { return paths_; }

 private:
  std::string HostIp() const { return "10." + std::to_string(net_) + ".0.1"; }

  const DemoPaths paths_;
  const std::string dir_;
  const int net_;
  CommandRunner& runner_;
  std::string components_dir_;  // kubectl and the other upstream programs

  std::mutex down_mu_;
  std::optional<CommandResult> down_;  // guarded by down_mu_
};

}  // namespace tessera::demo
