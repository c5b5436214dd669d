// HostGuardActions: what the memory guard does on a real node: SIGKILL through a pidfd after
// checking that the process is still in the container's cgroup, and Warning events on the pod
// through the API server (a failed event is logged, never retried).
//
// Thread-compatible (the guard calls it from one thread).
#pragma once

#include <cstdint>
#include <string>

#include "node/enforcement/memory_guard.h"
#include "node/pods/pod_source.h"

namespace tessera::node {

// Opens a pidfd for `pid`, checks that the process it names is in `cgroup_dir` (or a cgroup
// below it) and signals it through the pidfd: a PID reused by another process is never
// signalled. True when SIGKILL was sent.
bool KillIfInCgroup(uint32_t pid, const std::string& cgroup_dir);

class HostGuardActions : public GuardActions {
 public:
  explicit HostGuardActions(ApiWriter& writer) : writer_(writer) {}
  void Event(const std::string& ns, const std::string& pod, const std::string& reason,
             const std::string& message) override;
  bool Kill(uint32_t pid, const std::string& cgroup_dir) override {
    return KillIfInCgroup(pid, cgroup_dir);
  }

 private:
  ApiWriter& writer_;
};

}  // namespace tessera::node
