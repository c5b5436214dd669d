// KubeletLoop: what tessera-fake-kubelet does against an API server: keeps the Node object
// (created when missing) with the registered resources' healthy device counts in
// status.capacity and status.allocatable; watches the pods bound to the node and admits them one
// at a time in arrival order (Admitter); "starts" each container by running a command with the
// container's environment and TESSERA_LIMITS_FILE; and reports the pod's phase (Running, then
// Succeeded or Failed; Failed with reason UnexpectedAdmissionError when admission fails), its QoS
// class and each started container's ID and state. With a cgroup root, each container also gets
// a cgroup folder there holding its process's PID while it runs (fake_cgroups.h).
//
// Start/Stop from one thread; the loop runs on its own threads. Thread-safe otherwise.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fakekubelet/admitter.h"
#include "kube/client.h"
#include "kube/informer.h"

namespace tessera::fakekubelet {

struct LoopOptions {
  std::string node;
  std::string command = "true";  // run for every container, with `sh -c`
  std::string log_dir;           // <ns>_<pod>_<container>.log per container
  int command_timeout_s = 300;
  bool isolate = true;      // a private mount namespace per container where the machine allows it
  std::string cgroup_root;  // "" = no cgroup folders
};

class KubeletLoop {
 public:
  KubeletLoop(kube::Client& client, FakeKubeletRegistry& registry, Admitter& admitter,
              FakeDeviceCheckpoint& checkpoint, LoopOptions options);
  ~KubeletLoop();

  Status Start();
  void Stop();

 private:
  void Enqueue(const nlohmann::json& pod);
  void AdmitLoop();
  void StatusLoop();
  void StartContainers(nlohmann::json pod, std::vector<ContainerStart> starts);
  // `containers`: the pod's containerStatuses and initContainerStatuses to report (null: none).
  void SetPhase(const nlohmann::json& pod, const std::string& phase, const std::string& reason,
                const std::string& message, const nlohmann::json& containers = nullptr);

  kube::Client& client_;
  FakeKubeletRegistry& registry_;
  Admitter& admitter_;
  FakeDeviceCheckpoint& checkpoint_;
  const LoopOptions options_;
  std::unique_ptr<kube::Informer> pods_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<nlohmann::json> queue_;     // guarded by mu_
  std::set<std::string> seen_;           // pod UIDs admitted or queued; guarded by mu_
  std::vector<std::thread> containers_;  // guarded by mu_
  std::atomic<bool> stop_{false};
  std::thread admit_thread_, status_thread_;
};

}  // namespace tessera::fakekubelet
