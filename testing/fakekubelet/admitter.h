// Admitter: the fake kubelet's pod admission and container start, in kubelet's order. For each
// container (init containers first) and each registered resource it asks for: choose free healthy
// device IDs (asking GetPreferredAllocation when the plugin offers it), call Allocate, record the
// devices and the answer in the device checkpoint (node/kubelet/kubelet_checkpoint.h). Then, per
// container, PreStartContainer for each of its resources before "starting" it.
//
// Admission is serialised (one pod at a time, as kubelet); starts of different pods may run in
// parallel. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "fakekubelet/device_checkpoint.h"
#include "fakekubelet/registry.h"

namespace tessera::fakekubelet {

// What a container gets from its device plugins.
struct ContainerStart {
  std::string container;
  std::map<std::string, std::string> envs;
  std::map<std::string, std::string> mounts;  // container path -> host path
  std::vector<std::string> cdi_devices;
  // The host path of the limits file mounted at /var/run/tessera ("" when none).
  std::string limits_file;
  // The container's cgroup folder, where Run writes the started process's PID (cgroup.procs);
  // "" for none.
  std::string cgroup_dir;
};

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

class Admitter {
 public:
  Admitter(FakeKubeletRegistry& registry, FakeDeviceCheckpoint& checkpoint);

  // Allocates every container of `pod` (an API object). On error nothing of this pod stays
  // recorded.
  Result<std::vector<ContainerStart>> Allocate(const nlohmann::json& pod);
  // Calls PreStartContainer for every resource of `container` of `pod`.
  Status PreStart(const nlohmann::json& pod, const std::string& container);
  // Allocate, then PreStart of every container in order.
  Result<std::vector<ContainerStart>> Admit(const nlohmann::json& pod);

  // Runs `command` with `sh -c`, the container's environment and TESSERA_LIMITS_FILE naming its
  // limits file; kills it after `timeout_s`. With `isolate`, the command also gets a private mount
  // namespace (where the machine allows it: root, unshare(2)) with a tmpfs on /run and the
  // container's /var/run/... mounts bound in, so /var/run/tessera/limits and the shared region
  // are where the library looks; without it (or when that fails) only the variable points there.
  // With `start.cgroup_dir`, the process's PID is written to its cgroup.procs as it starts.
  static Result<RunResult> Run(const ContainerStart& start, const std::string& command,
                               int timeout_s, bool isolate = false);

 private:
  Result<std::vector<std::string>> ChooseDevices(const std::string& resource, int64_t count);

  FakeKubeletRegistry& registry_;
  FakeDeviceCheckpoint& checkpoint_;
  std::mutex admit_mu_;  // one admission at a time
  // Device IDs per (namespace/pod/container, resource), as allocated.
  std::mutex mu_;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> allocated_;
};

}  // namespace tessera::fakekubelet
