// tessera-fake-kubelet --dir DIR --node NAME [--kubeconfig FILE] [--command CMD] [--log-dir DIR]
//                      [--isolate true|false] [--cgroup-root DIR]
//
// Plays kubelet for the node agent: Registration on a socket and the device checkpoint under DIR
// (laid out as /var/lib/kubelet), node capacity reports, and admission and "start" of the pods
// bound to NAME (see kubelet_loop.h); with --cgroup-root, each container's cgroup folder in a fake
// cgroup v2 tree there (fake_cgroups.h). SIGHUP recreates kubelet.sock (a kubelet restart); SIGTERM
// or SIGINT ends it.
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "fakekubelet/kubelet_loop.h"
#include "kube/connection.h"
#include "log/log.h"

extern char** environ;

namespace {

int Usage(const std::string& why) {
  std::cerr << "tessera-fake-kubelet: " << why
            << "\nusage: tessera-fake-kubelet --dir DIR --node NAME [--kubeconfig FILE] "
               "[--command CMD] [--log-dir DIR] [--isolate true|false] [--cgroup-root DIR]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera;
  std::map<std::string, std::string> flags = {
      {"dir", ""},     {"node", ""},        {"kubeconfig", ""}, {"command", "true"},
      {"log-dir", ""}, {"isolate", "true"}, {"cgroup-root", ""}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) return Usage("unexpected argument " + arg);
    std::string key = arg.substr(2), value;
    if (size_t eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Usage("--" + key + " needs a value");
    }
    if (flags.count(key) == 0) return Usage("unknown flag --" + key);
    flags[key] = value;
  }
  if (flags["dir"].empty() || flags["node"].empty()) return Usage("--dir and --node are required");
  if (flags["isolate"] != "true" && flags["isolate"] != "false") {
    return Usage("--isolate must be true or false");
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  kube::Environment env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (size_t eq = kv.find('='); eq != std::string::npos)
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto connection = kube::ResolveConnection(flags["kubeconfig"], env);
  if (!connection.ok()) return Usage(connection.status().message());
  auto client = kube::Client::Create(*connection);
  if (!client.ok()) return Usage(client.status().message());

  fakekubelet::FakeKubeletRegistry registry(flags["dir"]);
  fakekubelet::FakeDeviceCheckpoint checkpoint(flags["dir"]);
  if (Status s = registry.Start(); !s.ok()) return Usage(s.message());
  if (Status s = checkpoint.Start(); !s.ok()) return Usage(s.message());
  if (!flags["log-dir"].empty()) std::filesystem::create_directories(flags["log-dir"]);
  fakekubelet::Admitter admitter(registry, checkpoint);
  fakekubelet::KubeletLoop loop(**client, registry, admitter, checkpoint,
                                {.node = flags["node"],
                                 .command = flags["command"],
                                 .log_dir = flags["log-dir"],
                                 .isolate = flags["isolate"] == "true",
                                 .cgroup_root = flags["cgroup-root"]});
  if (Status s = loop.Start(); !s.ok()) {
    log::Error("cannot start", {{"error", s.message()}});
    return 1;
  }
  log::Info("fake kubelet running", {{"node", flags["node"]}, {"dir", flags["dir"]}});
  while (true) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    log::Info("recreating kubelet.sock");
    if (Status s = registry.Recreate(); !s.ok()) log::Error("recreate", {{"error", s.message()}});
  }
  loop.Stop();
  registry.Stop();
  return 0;
}
