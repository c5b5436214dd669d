// PidsRefresher: keeps each allocation's pids file (src/abi/host_pids.h) current: the host PIDs of
// its owner container's processes and their PIDs inside the container, so that the library can
// match NVML's per-process data to its own processes without probing each one.
// For each allocation whose owner pod is in the cache (same UID, not finished) and whose container
// runs with a container ID, the processes of its cgroup are listed (cgroup_paths.h,
// container_pids.h); any other container, or one whose cgroup is not found (logged once per
// container ID, at info), gets an empty list. The file is rewritten atomically, only when it
// changes. Call from one thread (the agent's housekeeping loop, which also removes folders).
//
//   PidsRefresher pids(pods, {.state_dir = state_dir, .cgroup_root = "/sys/fs/cgroup"});
//   pids.RunOnce();  // every node.pid-refresh
//
// Why: docs/node-agent.md, "The pids file".
#pragma once

#include <map>
#include <string>

#include "node/pods/pod_source.h"

namespace tessera::node {

struct PidsOptions {
  std::string state_dir = "/var/lib/tessera";
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string kubelet_cgroup_root = "/";  // kubelet's cgroupRoot, above kubepods
  std::string proc_root = "/proc";
};

class PidsRefresher {
 public:
  // `pods` must outlive the refresher.
  PidsRefresher(const PodSource& pods, PidsOptions options);
  // One pass over the allocations.
  void RunOnce();
  // Allocation ID -> the cgroup folder its running container's PIDs were read from, as of the
  // last pass (containers that are not running, or whose cgroup was not found, are absent).
  const std::map<std::string, std::string>& cgroups() const { return cgroups_; }

 private:
  // Refreshes the pids file in allocation folder `dir` (ID `id`).
  void Refresh(const std::string& id, const std::string& dir);

  const PodSource& pods_;
  const PidsOptions options_;
  // Allocation ID -> the container ID whose missing cgroup was logged.
  std::map<std::string, std::string> logged_missing_;
  std::map<std::string, std::string> cgroups_;
};

}  // namespace tessera::node
