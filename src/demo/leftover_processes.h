// LeftoverProcesses: finds the processes that still refer to a folder, so that the demo can check
// that it left nothing running. Every host process of the demo's cluster refers to the demo's work
// folder, which holds the cluster's: in its command line (kubeconfig, certificates, state
// folders), its environment (SIMGPU_STATE) or an open file (its log). The cluster's processes are
// detached from the demo (sessions of their own), so this looks at every process, not the demo's
// children. (Processes inside containers are in the nodes' cgroups, which `tessera-dev-cluster
// down` empties and checks.)
//
// Thread-safety: no shared state.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace tessera::demo {

// "PID command line" of every process but this one whose command line, environment, working
// directory or open files name `folder` (an absolute path). Looks again every 100 ms until none
// does or `wait` has passed (processes just killed may take a moment to go). Processes this user
// may not inspect are not seen.
std::vector<std::string> LeftoverProcesses(const std::string& folder,
                                           std::chrono::milliseconds wait);

}  // namespace tessera::demo
