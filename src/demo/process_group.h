// ProcessGroup: the demo's child processes, all in one process group, so that one kill reaches
// them and everything they started (a fake kubelet's container commands included).
//
// The first Spawn creates the group (its child becomes the leader); later children join it.
// Every child also gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the demo even when the demo is
// killed with SIGKILL. StopAll() sends SIGTERM to the group, waits up to a grace period, then
// sends SIGKILL and reaps the direct children. InstallSignalCleanup() makes SIGINT, SIGTERM and
// SIGHUP kill the group and end the demo with 130 (Ctrl-C) or 143.
//
// Thread-safety: Spawn and StopAll from one thread; the signal handler only reads the group id,
// which is an atomic.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace tessera::demo {

class ProcessGroup {
 public:
  ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  ~ProcessGroup();  // StopAll()

  // Starts argv[0] (a path) with the demo's environment plus `env`, stdout and stderr appended to
  // `log_file`. Returns the child's pid, or an error naming the program when fork or the log file
  // failed (an exec failure shows as exit 127 and a line in the log).
  Result<pid_t> Spawn(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env, const std::string& log_file);

  // True while `pid` (a child of this group) has not exited; reaps it when it has.
  bool Alive(pid_t pid);

  // Ends every process of the group: SIGTERM, up to `grace`, then SIGKILL. Idempotent.
  void StopAll(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));

  // Routes SIGINT/SIGTERM/SIGHUP of this process to killing the current group, then _exit.
  static void InstallSignalCleanup();

 private:
  std::vector<pid_t> children_;
};

}  // namespace tessera::demo
