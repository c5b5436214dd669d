// The processes of a container, as pairs of host PID and PID in the container's own namespace,
// read from its cgroup folder (cgroup.procs, the same file in cgroup v1 and v2) and from
// /proc/<pid>/status (NSpid), and the pids file text the library reads (src/abi/host_pids.h).
//
// Pure functions over the file system; thread-safe. The roots are parameters so that tests use
// fake trees.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace tessera::node {

struct ContainerPid {
  pid_t host = 0;       // in the PID namespace of `proc_root` (the host's, for the agent)
  pid_t container = 0;  // in the container's innermost PID namespace
  bool operator==(const ContainerPid&) const = default;
};

// The PIDs listed in cgroup.procs of `cgroup_dir` and of every cgroup below it (runtimes may
// put the processes in sub-cgroups), sorted, without duplicates. Folders that vanish while being
// read are skipped; a missing `cgroup_dir` gives an empty list.
std::vector<pid_t> CgroupPids(const std::string& cgroup_dir);

// The PID of `pid` in its innermost namespace: the last field of the NSpid line of
// <proc_root>/<pid>/status, or `pid` itself when the kernel writes no NSpid (before 4.1). nullopt
// when the file cannot be read (the process exited) or the line is malformed.
std::optional<pid_t> NamespacePid(const std::string& proc_root, pid_t pid);

// CgroupPids of `cgroup_dir` paired with their NamespacePid; processes that exited are left out.
std::vector<ContainerPid> ContainerPids(const std::string& cgroup_dir,
                                        const std::string& proc_root);

// The pids file: "version=1\n" then "<host> <container>\n" per process, in the given order.
std::string PidsText(const std::vector<ContainerPid>& pids);

}  // namespace tessera::node
