// PidsRefresher: keeps each allocation's pids file (src/abi/host_pids.h) current: the host PIDs of
// its owner container's processes and their PIDs inside the container, so that the library can
// match NVML's per-process data to its own processes without probing each one.
// For each allocation whose owner pod is in the cache (same UID, not finished) and whose container
// runs with a container ID, the processes of its cgroup are listed (cgroup_paths.h,
// container_pids.h); any other container, or one whose cgroup is not found (logged once per
// container ID, at info), gets an empty list. A DRA claim's allocation (owner kind ResourceClaim)
// lists the processes of every running container of this node's pods that uses the claim; where
// two of them have the same PID in their own namespaces (pods sharing one claim), that PID is left
// out, since the library could not tell which is its own (logged once per allocation). The file
// is rewritten atomically, only when it changes. Call from one thread (the agent's housekeeping
// loop, which also removes folders).
//
//   PidsRefresher pids(pods, {.state_dir = state_dir, .cgroup_root = "/sys/fs/cgroup"});
//   pids.RunOnce();  // every node.pid-refresh
//
// Why: docs/node-agent.md, "The pids file".
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/containers/container_pids.h"
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
  // last pass (containers that are not running, or whose cgroup was not found, are absent; so are
  // DRA claims, whose containers may be several).
  const std::map<std::string, std::string>& cgroups() const { return cgroups_; }

 private:
  // Refreshes the pids file in allocation folder `dir` (ID `id`); `node_pods` as the pass read
  // them.
  void Refresh(const std::string& id, const std::string& dir, const std::vector<PodRef>& node_pods);
  // Appends the processes of `pod`'s container `container` (none while it is not running, or its
  // cgroup is not found) and sets `cgroup` to where they were read. False when the container has
  // not started (no container ID): nothing to write yet.
  bool ContainerPidsOf(const std::string& id, const nlohmann::json& pod,
                       const std::string& container, std::vector<ContainerPid>* pids,
                       std::optional<std::string>* cgroup);
  // The processes of the containers of `node_pods` that use DRA claim `owner` names; false when
  // none of them has started.
  bool ClaimPids(const std::string& id, const nlohmann::json& owner,
                 const std::vector<PodRef>& node_pods, std::vector<ContainerPid>* pids);
  // Leaves out the processes whose namespace PID another one in `pids` has too.
  void DropAmbiguous(const std::string& id, std::vector<ContainerPid>* pids);

  const PodSource& pods_;
  const PidsOptions options_;
  // "<allocation ID>/<pod UID>/<container>" -> the container ID whose missing cgroup was logged.
  std::map<std::string, std::string> logged_missing_;
  // Allocations whose left-out processes were logged.
  std::set<std::string> logged_ambiguous_;
  std::map<std::string, std::string> cgroups_;
};

}  // namespace tessera::node
