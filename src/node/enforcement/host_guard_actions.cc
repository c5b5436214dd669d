#include "node/enforcement/host_guard_actions.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "log/log.h"
#include "node/containers/container_pids.h"

namespace tessera::node {

bool KillIfInCgroup(uint32_t pid, const std::string& cgroup_dir) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (pidfd < 0) return false;  // exited already
  // The pidfd pins the process: if `pid` now names another process, the cgroup check is of that
  // one, and the signal can only reach the process checked.
  std::vector<pid_t> members = CgroupPids(cgroup_dir);
  bool member = std::binary_search(members.begin(), members.end(), static_cast<pid_t>(pid));
  bool sent = member && syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0;
  close(pidfd);
  return sent;
}

void HostGuardActions::Event(const std::string& ns, const std::string& pod,
                             const std::string& reason, const std::string& message) {
  Status s = writer_.CreatePodEvent(ns, pod, "Warning", reason, message);
  if (!s.ok()) {
    log::Warn("cannot record an event on the pod",
              {{"pod", ns + "/" + pod}, {"reason", reason}, {"error", s.message()}});
  }
}

}  // namespace tessera::node
