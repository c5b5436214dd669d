#include "node/agent.h"

#include <algorithm>

#include "annotations/names.h"
#include "log/log.h"
#include "node/allocation/allocation_folders.h"
#include "node/allocation/grant.h"
#include "node/enforcement/host_guard_actions.h"
#include "node/gpu/inventory.h"

namespace tessera::node {

Agent::Agent(AgentOptions options, GpuSource& gpus, PodSource& pods, ApiWriter& writer,
             DeviceAssignments& kubelet)
    : options_(std::move(options)),
      gpus_(gpus),
      writer_(writer),
      recorder_(pods, writer, options_.allocator.signing),
      allocator_(options_.allocator, options_.resources, pods, recorder_, kubelet),
      plugins_(options_.kubelet_dir + "/device-plugins", options_.resources,
               options_.allocator.split_count, allocator_, board_,
               [this](bool registered) { board_.SetServing(registered); }),
      housekeeper_(allocator_, pods, options_.allocator.state_dir, options_.unowned_grace),
      pids_(pods, {.state_dir = options_.allocator.state_dir,
                   .cgroup_root = options_.cgroup_root,
                   .kubelet_cgroup_root = options_.kubelet_cgroup_root,
                   .proc_root = options_.proc_root}),
      limits_(allocator_, pods, writer,
              {.state_dir = options_.allocator.state_dir,
               .node_name = options_.allocator.node_name,
               .signing = options_.allocator.signing}),
      spill_notices_(writer, options_.allocator.state_dir) {}

Agent::~Agent() {
  Stop();
}

Status Agent::Start() {
  Result<std::vector<GpuInfo>> found = gpus_.Discover();
  std::vector<GpuInfo> gpus;
  if (found.ok() && found->empty()) {
    found = Status(StatusCode::kFailedPrecondition, "the driver reports no GPU on this node");
  }
  if (found.ok()) {
    gpus = *found;
  } else if (options_.fail_on_init_error) {
    return found.status().WithContext(
        "GPU discovery (set node.fail-on-init-error=false to serve no devices instead)");
  } else {
    log::Error("GPU discovery failed; serving no devices", {{"error", found.status().message()}});
  }
  for (GpuInfo& g : gpus) {
    g.memory_scaling = options_.memory_scaling;
    log::Info("GPU", {{"index", std::to_string(g.index)},
                      {"uuid", g.uuid},
                      {"model", g.model},
                      {"memoryMiB", std::to_string(g.memory_mib)},
                      {"virtualMemoryMiB", std::to_string(g.virtual_memory_mib())},
                      {"sms", std::to_string(g.sms)},
                      {"pci", g.pci_bus_id},
                      {"numa", std::to_string(g.numa)},
                      {"device", g.device_path}});
    if (g.mig.capable && (g.mig.enabled || g.mig.pending || g.mig.mode != MigMode::kNone)) {
      log::Info("GPU MIG", {{"index", std::to_string(g.index)},
                            {"mode", MigModeName(g.mig.mode)},
                            {"enabled", g.mig.enabled ? "true" : "false"},
                            {"pending", g.mig.pending ? "true" : "false"},
                            {"instances", std::to_string(g.mig.instances.size())}});
    }
    for (const MigInstanceInfo& m : g.mig.instances) {
      log::Info("MIG device",
                {{"gpu", std::to_string(g.index)},
                 {"uuid", m.uuid},
                 {"profile", m.device_name},
                 {"placement", std::to_string(m.start) + ":" + std::to_string(m.size)},
                 {"memoryMiB", std::to_string(m.memory_mib)},
                 {"sms", std::to_string(m.sms)},
                 {"healthy", m.healthy ? "true" : "false"}});
    }
  }
  board_.Set(gpus);
  allocator_.SetGpus(gpus);
  RETURN_IF_ERROR(allocator_.Init());
  if (options_.mode == NodeMode::kDra) {
    RETURN_IF_ERROR(StartDra());
  } else {
    RETURN_IF_ERROR(plugins_.Start());
  }
  stop_ = false;
  publisher_ = std::thread([this] { Publish(); });
  housekeeping_ = std::thread([this] { Housekeep(); });
  return Status::Ok();
}

void Agent::UseDra(AgentPart& plugin, ClaimOwner& claims, AgentPart* slices) {
  dra_plugin_ = &plugin;
  dra_slices_ = slices;
  housekeeper_.SetClaimOwner(&claims);
}

Status Agent::StartDra() {
  if (dra_plugin_ == nullptr) {
    return FailedPrecondition("node.mode=dra but no DRA kubelet plugin was given (Agent::UseDra)");
  }
  RETURN_IF_ERROR(dra_plugin_->Start());
  dra_started_ = true;
  if (dra_slices_ != nullptr) {
    if (Status s = dra_slices_->Start(); !s.ok()) {
      StopDra();
      return s;
    }
  }
  return Status::Ok();
}

// The parts given to UseDra may be gone by the Agent's destructor: only a started Agent stops them.
void Agent::StopDra() {
  if (!dra_started_) return;
  if (dra_slices_ != nullptr) dra_slices_->Stop();
  dra_plugin_->Stop();
  dra_started_ = false;
}

void Agent::MonitorHealth(HealthProbe& probe) {
  health_ = std::make_unique<HealthMonitor>(probe, board_, options_.xid_hold);
  health_->Start();
}

void Agent::Stop() {
  if (publisher_.joinable() && !stop_) {
    board_.SetServing(false);
    const uint64_t version = board_.Get().version;
    std::unique_lock lock(published_mu_);
    if (!published_cv_.wait_for(lock, std::chrono::seconds(3),
                                [&] { return published_version_ >= version; })) {
      log::Warn("stopping before the node's inventory says its devices are not served");
    }
  }
  stop_ = true;
  if (health_) health_->Stop();
  if (publisher_.joinable()) publisher_.join();
  if (housekeeping_.joinable()) housekeeping_.join();
  StopDra();
  plugins_.Stop();
}

void Agent::Publish() {
  // What Stop waits for: the board's version whose inventory the API server has.
  auto mark_published = [this](uint64_t version) {
    {
      std::lock_guard lock(published_mu_);
      published_version_ = version;
    }
    published_cv_.notify_all();
  };
  std::string published;
  uint64_t seen = 0;
  while (!stop_) {
    DeviceBoard::Snapshot snap = board_.Get();
    if (snap.version != seen) {
      std::string value = GpusAnnotation(snap.gpus, options_.cores_scaling,
                                         options_.allocator.split_count, snap.serving);
      if (value != published) {
        AnnotationPatch patch;
        for (auto& [name, text] :
             options_.allocator.signing.Signed(kGpusAnnotation, options_.node_uid, value)) {
          patch[name] = std::move(text);
        }
        // The label lets the webhook keep GPU pods to GPU nodes before kube-scheduler samples.
        AnnotationPatch labels;
        labels[annotations::kGpuNodeLabel] =
            snap.gpus.empty() ? std::nullopt : std::optional<std::string>("true");
        Status s = writer_.PatchNode(options_.allocator.node_name, patch, labels);
        if (s.ok()) {
          published = value;
          seen = snap.version;
          mark_published(snap.version);
          log::Info("published the GPU inventory", {{"gpus", std::to_string(snap.gpus.size())},
                                                    {"serving", snap.serving ? "true" : "false"}});
        } else {
          log::Warn("could not publish the GPU inventory; retrying", {{"error", s.message()}});
        }
      } else {
        seen = snap.version;
        mark_published(snap.version);
      }
    }
    // After a failed patch, wait for the retry delay unless something changes again.
    board_.WaitChange(snap.version, std::chrono::milliseconds(seen == snap.version ? 500 : 2000));
  }
}

void Agent::GuardMemory(ProcessMemoryReader read) {
  if (!options_.memory_guard_on) return;
  guard_actions_ = std::make_unique<HostGuardActions>(writer_);
  guard_ = std::make_unique<MemoryGuard>(options_.memory_guard, *guard_actions_);
  read_memory_ = std::move(read);
}

// One thread for all of them, so a pids file or a spill notice is never written into a folder being
// removed, and the memory guard sees the cgroups of the latest pids refresh.
void Agent::Housekeep() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point next_sweep = Clock::now(), next_pids = Clock::now();
  Clock::time_point next_guard = guard_ ? Clock::now() : Clock::time_point::max();
  Clock::time_point next_spill = Clock::now();
  while (!stop_) {
    if (Clock::now() >= next_sweep) {
      housekeeper_.RunOnce();
      next_sweep = Clock::now() + options_.housekeeping_interval;
    }
    if (Clock::now() >= next_pids) {
      pids_.RunOnce();
      // As often as the pids: a resize reaches the container within about a second.
      limits_.RunOnce(board_.Get().gpus);
      next_pids = Clock::now() + options_.pid_refresh;
    }
    if (Clock::now() >= next_guard) {
      guard_->Check(
          GuardedContainers(ReadAllocationFolders(options_.allocator.state_dir), pids_.cgroups()),
          read_memory_(board_.Get().gpus));
      next_guard = Clock::now() + options_.memory_guard_interval;
    }
    // Only a scaled node writes spill.<i> into limits files: elsewhere nothing can spill.
    if (options_.memory_scaling > 1 && Clock::now() >= next_spill) {
      spill_notices_.Check(ReadAllocationFolders(options_.allocator.state_dir), board_.Get().gpus);
      next_spill = Clock::now() + options_.spill_check_interval;
    }
    // Wake for the next task, and at least every 100 ms to notice Stop.
    Clock::time_point wake = std::min({next_sweep, next_pids, next_guard, next_spill,
                                       Clock::now() + std::chrono::milliseconds(100)});
    std::this_thread::sleep_until(wake);
  }
}

}  // namespace tessera::node
