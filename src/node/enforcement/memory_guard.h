// MemoryGuard: the host-side check of each container's GPU memory, which does not trust the
// container: it adds up what the driver (NVML) says the container's host processes hold on each
// of its GPUs, and when the sum is over the container's limit by more than `tolerance` on
// `strikes` checks in a row, records it (a log line, a Warning event on the pod, a metric) and,
// under the `kill` action, kills the container's processes on that GPU, the largest first, until
// what is left fits the limit. A process is killed only while it is still in the container's
// cgroup (GuardActions::Kill). Check() from one thread (the agent's housekeeping loop); the
// counters may be read from any.
//
//   MemoryGuard guard({.action = GuardAction::kKill}, actions);
//   guard.Check(GuardedContainers(folders, pids.cgroups()), memory);  // every 2 s
//
// Why, and what it allows: docs/node-agent.md, "The host-side memory check".
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "node/allocation/allocation_folders.h"
#include "node/gpu/nvml_process_memory.h"

namespace tessera::node {

// One container on one of its GPUs, as its allocation folder and its cgroup tell.
struct GuardedContainer {
  std::string allocation;  // the allocation's ID
  std::string ns, pod, container;
  std::string uuid;
  uint64_t limit_bytes = 0;  // 0 = no limit: not checked
  std::vector<uint32_t> host_pids;
  std::string cgroup_dir;  // where host_pids were read; "" = unknown (nothing is killed)
};

struct Overuse {
  GuardedContainer container;
  uint64_t used_bytes = 0;
  // The container's processes on the GPU and what each holds, largest first.
  std::vector<std::pair<uint32_t, uint64_t>> processes;
};

// Each device with a memory limit of each folder whose pids file could be read; `cgroups` gives
// the cgroup each container's PIDs came from (PidsRefresher::cgroups).
std::vector<GuardedContainer> GuardedContainers(const std::vector<AllocationFolder>& folders,
                                                const std::map<std::string, std::string>& cgroups);

// The containers whose processes hold more than their limit plus `tolerance` on their GPU, as
// `memory` (the driver's per-process figures) says. Containers without a limit, and GPUs the
// driver did not answer for, are left out.
std::vector<Overuse> FindOveruse(const std::vector<GuardedContainer>& containers,
                                 const ProcessMemory& memory, uint64_t tolerance);

// The processes to stop so that what the others hold fits the limit: the largest first.
std::vector<uint32_t> ProcessesToStop(const Overuse& overuse);

enum class GuardAction { kReport, kKill };

struct GuardOptions {
  GuardAction action = GuardAction::kKill;
  uint64_t tolerance = 512ull << 20;
  int strikes = 2;
};

// What the guard does to the world; the node agent's implementation signals processes and
// records events through the API server.
class GuardActions {
 public:
  virtual ~GuardActions() = default;
  virtual void Event(const std::string& ns, const std::string& pod, const std::string& reason,
                     const std::string& message) = 0;
  // Sends SIGKILL to host process `pid` if it is still in `cgroup_dir`; true when sent.
  virtual bool Kill(uint32_t pid, const std::string& cgroup_dir) = 0;
};

class MemoryGuard {
 public:
  MemoryGuard(GuardOptions options, GuardActions& actions);

  void Check(const std::vector<GuardedContainer>& containers, const ProcessMemory& memory);

  // Overuse episodes seen (one per container and GPU until it is back under its limit), and
  // processes killed.
  uint64_t overuses() const { return overuses_.load(); }
  uint64_t kills() const { return kills_.load(); }
  const GuardOptions& options() const { return options_; }

 private:
  void Act(const Overuse& overuse);

  const GuardOptions options_;
  GuardActions& actions_;
  // "allocation/uuid" -> consecutive checks over the limit.
  std::map<std::string, int> strikes_;
  std::atomic<uint64_t> overuses_{0}, kills_{0};
};

}  // namespace tessera::node
