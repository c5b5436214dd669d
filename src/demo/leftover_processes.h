// LeftoverProcesses: finds the processes that still refer to a folder, so that the demo can check
// that it left nothing running. Every process the demo starts refers to its work folder: in its
// command line (kubeconfig, state folders), its environment (SIMGPU_STATE, inherited by the
// containers' commands, and TESSERA_LIMITS_FILE) or an open file (its log). A process that left
// the demo's process group is found too.
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
