// Agent: the node agent put together. Discovers the GPUs, publishes the node's `tessera.io/gpus`
// annotation (again whenever health changes it), serves and registers one device plugin per
// enabled resource, keeps health current, keeps each running container's pids file and limits
// file (a resize: docs/resize.md) current and removes the files of containers that are gone, and
// records an Event on a pod when a container's GPU memory first spills to host memory. With mode
// kDra it serves the DRA parts given to UseDra instead of device plugins. Policy lives in the parts
// (Allocator, PluginManager, HealthMonitor, Housekeeper, PidsRefresher, LimitsRefresher,
// SpillNotices); the Agent only wires and starts them. Start/Stop from one thread; the publisher
// and housekeeping run on their own threads.
//
//   Agent agent(options, gpus, pods, writer, checkpoint);
//   agent.MonitorHealth(probe);
//   RETURN_IF_ERROR(agent.Start());
//   agent.Stop();  // publishes first that the devices are not served
//
// DRA mode: docs/dra.md, "Mode"; the rest: docs/node-agent.md.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "node/agent_part.h"
#include "node/allocation/allocation_recorder.h"
#include "node/allocation/allocator.h"
#include "node/allocation/housekeeper.h"
#include "node/allocation/limits_refresher.h"
#include "node/containers/pids_refresher.h"
#include "node/enforcement/memory_guard.h"
#include "node/gpu/device_board.h"
#include "node/gpu/gpu.h"
#include "node/gpu/health_monitor.h"
#include "node/kubelet/kubelet_checkpoint.h"
#include "node/kubelet/plugin_manager.h"
#include "node/metrics/spill_notices.h"
#include "node/mig/mig_config.h"
#include "node/pods/pod_source.h"

namespace tessera::node {

enum class NodeMode { kDevicePlugin, kDra };

struct AgentOptions {
  NodeMode mode = NodeMode::kDevicePlugin;
  AllocatorOptions allocator;  // its `signing` also signs what the agent writes
  std::string node_uid;        // the Node's metadata.uid, for the signature of tessera.io/gpus
  std::string kubelet_dir = "/var/lib/kubelet";
  std::string dra_unhealthy_taint = "NoSchedule";  // mode kDra: resource_slices.h
  std::string dra_instance_uid;                    // mode kDra: dra/dra_plugin.h
  std::vector<ResourceSpec> resources;
  double cores_scaling = 1;
  // node.device-memory-scaling, set on every GPU found (GpuInfo::memory_scaling).
  double memory_scaling = 1;
  bool fail_on_init_error = true;
  MigConfig mig;  // node.mig.*: applied before the agent starts (node/mig/mig_manager.h)
  std::chrono::milliseconds xid_hold{60'000};
  std::chrono::seconds housekeeping_interval{30};
  std::chrono::seconds unowned_grace{600};  // allocations that never got an owner
  // The pids files of running containers (pids_refresher.h).
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string kubelet_cgroup_root = "/";
  std::string proc_root = "/proc";
  std::chrono::milliseconds pid_refresh{1000};
  // The host-side memory check (enforcement/memory_guard.h), once GuardMemory is called.
  bool memory_guard_on = true;
  GuardOptions memory_guard;
  std::chrono::milliseconds memory_guard_interval{2000};
  // How often the containers' regions are read for a first spill (metrics/spill_notices.h).
  std::chrono::milliseconds spill_check_interval{2000};
};

class Agent {
 public:
  // All references must outlive the Agent.
  Agent(AgentOptions options, GpuSource& gpus, PodSource& pods, ApiWriter& writer,
        DeviceAssignments& kubelet);
  ~Agent();

  // Mode kDra: `plugin` (the DRA kubelet plugin) is started instead of the device plugins, and
  // `slices` (the ResourceSlice publisher; may be null) after it; `claims` owns the files of
  // prepared claims for the housekeeper. All must outlive the Agent's Stop. Call before Start.
  void UseDra(AgentPart& plugin, ClaimOwner& claims, AgentPart* slices);
  // Discovery (an error, or no GPU, is fatal with fail_on_init_error; otherwise logged and the
  // plugins serve no devices), the inventory annotation, the plugins (mode kDra: the parts given
  // to UseDra; FailedPrecondition without them).
  Status Start();
  // Starts the health monitor on `probe` (which must outlive the Agent).
  void MonitorHealth(HealthProbe& probe);
  // Checks every container's GPU memory against its limit with what `read` says each host
  // process holds (the driver's figures), every memory_guard_interval, from the housekeeping
  // thread. Call before Start; nothing when memory_guard_on is false.
  using ProcessMemoryReader = std::function<ProcessMemory(const std::vector<GpuInfo>&)>;
  void GuardMemory(ProcessMemoryReader read);
  // The guard, or null.
  const MemoryGuard* memory_guard() const { return guard_.get(); }
  // Publishes first that the node's devices are not served (the scheduler then places no pod on
  // it: kubelet would fail pods whose devices no plugin serves), for up to 3 s, then stops.
  void Stop();

  DeviceBoard& board() { return board_; }
  Allocator& allocator() { return allocator_; }
  AllocationRecorder& recorder() { return recorder_; }
  PluginManager& plugins() { return plugins_; }

 private:
  void Publish();
  void Housekeep();
  Status StartDra();
  void StopDra();

  const AgentOptions options_;
  GpuSource& gpus_;
  ApiWriter& writer_;
  DeviceBoard board_;
  AllocationRecorder recorder_;
  Allocator allocator_;
  PluginManager plugins_;
  Housekeeper housekeeper_;
  PidsRefresher pids_;
  LimitsRefresher limits_;
  std::unique_ptr<HealthMonitor> health_;
  std::unique_ptr<GuardActions> guard_actions_;
  std::unique_ptr<MemoryGuard> guard_;
  SpillNotices spill_notices_;
  ProcessMemoryReader read_memory_;
  AgentPart* dra_plugin_ = nullptr;  // mode kDra
  AgentPart* dra_slices_ = nullptr;
  bool dra_started_ = false;
  std::atomic<bool> stop_{false};
  std::thread publisher_, housekeeping_;
  std::mutex published_mu_;
  std::condition_variable published_cv_;
  uint64_t published_version_ = 0;  // the board version last published; published_mu_
};

}  // namespace tessera::node
