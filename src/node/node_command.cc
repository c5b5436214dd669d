#include "node/node_command.h"

#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <iostream>

#include "annotations/signing.h"
#include "common/metric_labels.h"
#include "common/strings.h"
#include "kube/config_keys.h"
#include "kube/objects.h"
#include "log/log.h"
#include "node/agent.h"
#include "node/allocation/allocation_folders.h"
#include "node/config_keys.h"
#include "node/dra/board_slice_publisher.h"
#include "node/dra/claim_source.h"
#include "node/dra/dra_driver.h"
#include "node/dra/dra_plugin.h"
#include "node/gpu/nvml_gpu_source.h"
#include "node/gpu/nvml_health_probe.h"
#include "node/gpu/nvml_process_memory.h"
#include "node/gpu/nvml_process_shares.h"
#include "node/kubelet/kubelet_version.h"
#include "node/metrics/metrics.h"
#include "node/metrics/metrics_server.h"
#include "node/mig/mig_manager.h"
#include "node/pods/kube_pod_source.h"

namespace tessera::node {
namespace {

// node.mig.*, before the agent discovers its GPUs: fixed layouts made, MIG mode turned on. A MIG
// device a container's allocation names (its folder survives the agent's restart) counts as in
// use, as does one a process runs on; a GPU an allocation names itself is not turned to MIG.
Status ApplyMigAtStart(const NvmlLibrary& nvml, const AgentOptions& options,
                       const std::string& sysfs_root) {
  Result<MigMinors> minors = ReadMigMinors(options.mig.minors_file);
  if (!minors.ok()) {
    log::Warn("no MIG capability minors: MIG devices cannot be given to containers",
              {{"error", minors.status().message()}});
  }
  MigManager manager(nvml, minors.ok() ? *minors : MigMinors{});
  ASSIGN_OR_RETURN(std::vector<GpuInfo> found,
                   NvmlGpuSource(nvml, sysfs_root, options.mig).Discover());
  std::set<std::string> held;
  for (const AllocationFolder& f : ReadAllocationFolders(options.allocator.state_dir)) {
    for (const FolderDevice& d : f.devices) held.insert(d.uuid);
  }
  return ApplyMigConfig(manager, options.mig, found, held);
}

// The GpuSource of a node whose NVML could not be loaded: discovery reports why.
class UnavailableGpuSource : public GpuSource {
 public:
  explicit UnavailableGpuSource(Status why) : why_(std::move(why)) {}
  Result<std::vector<GpuInfo>> Discover() override { return why_; }

 private:
  Status why_;
};

// node.mode=dra: the DRA kubelet plugin, instead of the device plugins (docs/dra.md).
struct DraParts {
  DraParts(kube::Client& client, const AgentOptions& o, const DeviceBoard& board)
      : claims(client),
        driver({.node_name = o.allocator.node_name,
                .state_dir = o.allocator.state_dir,
                .cdi_dir = o.allocator.cdi_dir,
                .library_path = o.allocator.library_path,
                .driver_root = o.allocator.driver_root},
               claims, board),
        plugin({.kubelet_dir = o.kubelet_dir,
                .pool = o.allocator.node_name,
                .instance_uid = o.dra_instance_uid},
               driver, board),
        slices(client,
               {.node_name = o.allocator.node_name,
                .node_uid = o.node_uid,
                .unhealthy_taint = o.dra_unhealthy_taint},
               board) {}
  dra::KubeClaimSource claims;
  dra::DraDriver driver;
  dra::DraPlugin plugin;
  BoardSlicePublisher slices;
};

int Run(const config::Config& cfg, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "tessera node: unexpected argument \"" << args[0] << "\" (it takes flags only)\n";
    return 2;
  }
  const char* env_node = std::getenv("NODE_NAME");
  Result<AgentOptions> options = OptionsFromConfig(cfg, env_node ? env_node : "");
  if (!options.ok()) {
    std::cerr << "tessera node: " << options.status().message() << "\n";
    return 2;
  }
  annotations::LogSigning(options->allocator.signing, "node.annotation-key-file",
                          cfg.GetString("node.annotation-key-file"));
  // Signals are taken by sigwait below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Result<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Open(cfg.GetString("node.nvml-library"));
  if (!nvml.ok() && options->fail_on_init_error) {
    log::Error("no NVML (set node.fail-on-init-error=false to serve no devices instead)",
               {{"error", nvml.status().message()}});
    return 1;
  }
  if (nvml.ok() && options->mig.AnyMig()) {
    if (Status s = ApplyMigAtStart(**nvml, *options, cfg.GetString("node.sysfs-root")); !s.ok()) {
      log::Error("MIG configuration (node.mig.*) not applied", {{"error", s.message()}});
      return 1;
    }
  }
  std::unique_ptr<GpuSource> gpus;
  if (nvml.ok()) {
    gpus = std::make_unique<NvmlGpuSource>(**nvml, cfg.GetString("node.sysfs-root"), options->mig);
  } else {
    gpus = std::make_unique<UnavailableGpuSource>(nvml.status());
  }
  std::unique_ptr<kube::Client> client = kube::CommandClient(cfg);
  if (client == nullptr) return 1;
  KubePodSource pods(*client, options->allocator.node_name);
  if (Status s = pods.Start(std::chrono::seconds(60)); !s.ok()) {
    log::Error("cannot start the pod cache", {{"error", s.message()}});
    return 1;
  }
  Result<nlohmann::json> node = client->Get(kube::kNodes, "", options->allocator.node_name);
  if (node.ok()) options->node_uid = kube::UidOf(*node);
  if (options->allocator.signing.enabled() && options->node_uid.empty()) {
    log::Error("cannot read this node's metadata.uid, which tessera.io/gpus is signed for",
               {{"node", options->allocator.node_name},
                {"error", node.ok() ? "the Node has no metadata.uid" : node.status().message()}});
    pods.Stop();
    return 1;
  }
  if (node.ok()) {
    // A Node without status.nodeInfo (kubelet has not reported yet) gives no version.
    const nlohmann::json::json_pointer where("/status/nodeInfo/kubeletVersion");
    std::string version = node->contains(where) && node->at(where).is_string()
                              ? node->at(where).get<std::string>()
                              : "";
    if (std::optional<std::string> warning = CdiVersionWarning(version, options->allocator.cdi)) {
      log::Warn(*warning, {{"node", options->allocator.node_name}});
    }
  }
  KubeletCheckpoint kubelet(options->kubelet_dir + "/device-plugins/kubelet_internal_checkpoint",
                            options->allocator.state_dir + "/allocations");
  Agent agent(*options, *gpus, pods, pods, kubelet);
  std::unique_ptr<DraParts> dra;
  if (options->mode == NodeMode::kDra) {
    if (options->node_uid.empty()) {
      // The ResourceSlice is owned by the Node, so that it goes with it.
      log::Error("DRA mode needs this node's metadata.uid for its ResourceSlice's owner",
                 {{"node", options->allocator.node_name},
                  {"error", node.ok() ? "the Node has no metadata.uid" : node.status().message()}});
      pods.Stop();
      return 1;
    }
    dra = std::make_unique<DraParts>(*client, *options, agent.board());
    agent.UseDra(dra->plugin, dra->driver, &dra->slices);
    log::Info("DRA mode: serving the kubelet plugin of gpu.tessera.io, no device plugin",
              {{"kubelet-dir", options->kubelet_dir}});
  }
  if (nvml.ok() && options->memory_guard_on) {
    const NvmlLibrary* lib = nvml->get();
    agent.GuardMemory(
        [lib](const std::vector<GpuInfo>& all) { return NvmlProcessMemory(*lib, all); });
    log::Info("host-side memory check on",
              {{"action", cfg.GetString("node.memory-guard.action")},
               {"interval", cfg.ValueText("node.memory-guard.interval")},
               {"checks", cfg.ValueText("node.memory-guard.checks")},
               {"tolerance", cfg.ValueText("node.memory-guard.tolerance")}});
  } else if (options->memory_guard_on) {
    log::Warn("host-side memory check off: NVML is not available",
              {{"error", nvml.status().message()}});
  }
  if (Status s = agent.Start(); !s.ok()) {
    log::Error("node agent cannot start", {{"error", s.message()}});
    pods.Stop();
    return 1;
  }
  std::unique_ptr<NvmlHealthProbe> probe;
  if (nvml.ok()) {
    probe = std::make_unique<NvmlHealthProbe>(**nvml, agent.board().Get().gpus);
    agent.MonitorHealth(*probe);
  }
  const NvmlLibrary* nvml_for_shares = nvml.ok() ? nvml->get() : nullptr;
  // Ready: NVML answers, and kubelet has the agent's device plugins (or its DRA plugin)
  // registered. Live: the process serves (restarting it mends neither a driver nor a kubelet).
  auto not_ready = [&agent, &dra, nvml_for_shares,
                    nvml_error =
                        nvml.ok() ? std::string() : nvml.status().message()]() -> std::string {
    std::vector<std::string> why;
    unsigned count = 0;
    if (nvml_for_shares == nullptr) {
      why.push_back("NVML could not be loaded: " + nvml_error);
    } else if (Status s = nvml_for_shares->Check(nvml_for_shares->DeviceGetCount(&count),
                                                 "nvmlDeviceGetCount");
               !s.ok()) {
      why.push_back(s.message());
    }
    if (dra != nullptr && !dra->plugin.Registered()) {
      why.push_back("the DRA kubelet plugin is not registered with kubelet");
    } else if (dra == nullptr && !agent.board().Get().serving) {
      why.push_back("the device plugins are not registered with kubelet");
    }
    return tessera::Join(why, "; ");
  };
  MetricsServer metrics(
      [&agent, nvml_for_shares, node = options->allocator.node_name,
       state = options->allocator.state_dir, signing = options->allocator.signing] {
        std::vector<GpuInfo> gpus = agent.board().Get().gpus;
        ProcessShares shares;
        if (nvml_for_shares != nullptr) shares = NvmlProcessShares(*nvml_for_shares, gpus);
        std::string out = RenderMetrics(node, state, gpus, shares);
        RenderBuildInfo(out, "node");
        RenderUnverified(out, signing);
        RenderMemoryGuard(out, agent.memory_guard());
        return out;
      },
      not_ready);
  if (const std::string& listen = cfg.GetString("node.metrics-listen"); !listen.empty()) {
    if (Status s = metrics.Start(listen); !s.ok()) {
      log::Error("cannot serve metrics", {{"error", s.message()}});
      agent.Stop();
      pods.Stop();
      return 1;
    }
    log::Info("serving metrics", {{"listen", listen}, {"port", std::to_string(metrics.port())}});
  }
  log::Info("node agent running", {{"node", options->allocator.node_name}});
  int sig = 0;
  sigwait(&signals, &sig);
  log::Info("stopping", {{"signal", std::to_string(sig)}});
  metrics.Stop();
  agent.Stop();
  pods.Stop();
  return 0;
}

}  // namespace

config::Command NodeCommand() {
  return {.name = "node",
          .summary = "run the node agent (device plugins, GPU discovery and health)",
          .key_prefixes = {"node", "kube"},
          .run = &Run};
}

}  // namespace tessera::node
