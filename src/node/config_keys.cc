#include "node/config_keys.h"

#include "annotations/inventory.h"

namespace tessera::node {

using config::Type;

namespace {

constexpr const char* kMemoryScalingKey = "node.device-memory-scaling";

// A rule rather than the key's bounds, so that the refusal names the whole range.
Status MemoryScalingInRange(const config::Config& c) {
  const double scaling = c.GetFloat(kMemoryScalingKey);
  if (scaling >= annotations::kMinMemoryScaling && scaling <= annotations::kMaxMemoryScaling) {
    return Status::Ok();
  }
  return InvalidArgument("invalid value for " + c.Describe(kMemoryScalingKey) +
                         ": expected a value from " +
                         annotations::MemoryScalingText(annotations::kMinMemoryScaling) + " to " +
                         annotations::MemoryScalingText(annotations::kMaxMemoryScaling) +
                         " (the GPUs' virtual memory as a multiple of their physical memory)");
}

}  // namespace

void AddConfigKeys(config::Schema& s) {
  s.Add({.path = "node.node-name",
         .type = Type::kString,
         .default_value = "",
         .help = "this node's name (default: $NODE_NAME)",
         .flags = {"node-name"}});
  s.Add({.path = "node.mode",
         .type = Type::kString,
         .default_value = "device-plugin",
         .help = "how kubelet gets the GPUs: device-plugin (device plugins and the scheduler "
                 "extender) or dra (the DRA driver gpu.tessera.io: a kubelet plugin and "
                 "ResourceSlices; no device plugin, docs/dra.md)",
         .allowed = {"device-plugin", "dra"},
         .flags = {"mode"}});
  s.Add({.path = "node.dra.unhealthy-taint",
         .type = Type::kString,
         .default_value = "NoSchedule",
         .help = "DRA: the effect of the taint gpu.tessera.io/unhealthy that an unhealthy GPU "
                 "gets in the ResourceSlice: NoSchedule (no new claim gets it), NoExecute (the "
                 "pods whose claims use it are evicted too) or None (shown only)",
         .allowed = {"NoSchedule", "NoExecute", "None"}});
  s.Add({.path = "node.dra.instance-uid",
         .type = Type::kString,
         .default_value = "",
         .help = "DRA: a name unique to this agent (its pod's UID, from the downward API) for its "
                 "kubelet plugin sockets, gpu.tessera.io-<uid>-reg.sock and dra-<uid>.sock, so "
                 "that the old and the new agent of a rolling update with maxSurge serve at once "
                 "(kubelet 1.33 or newer); empty: gpu.tessera.io-reg.sock and dra.sock"});
  s.Add({.path = "node.kubelet-dir",
         .type = Type::kString,
         .default_value = "/var/lib/kubelet",
         .help = "kubelet's folder: its device-plugins/ (sockets and device checkpoint), "
                 "plugins_registry/ and plugins/ (the DRA plugin's sockets)",
         .flags = {"kubelet-dir"}});
  s.Add({.path = "node.cdi-dir",
         .type = Type::kString,
         .default_value = "/var/run/cdi",
         .help = "where the CDI specs of allocations are written",
         .flags = {"cdi-dir"}});
  s.Add({.path = "node.state-dir",
         .type = Type::kString,
         .default_value = "/var/lib/tessera",
         .help = "allocation folders (limits files), shared regions, ld.so.preload",
         .flags = {"state-dir"}});
  s.Add({.path = "node.device-split-count",
         .type = Type::kInt,
         .default_value = "10",
         .help = "vGPU slots advertised per GPU (containers that may share one GPU)",
         .min = 1,
         .max = 1000});
  s.Add({.path = "node.device-cores-scaling",
         .type = Type::kFloat,
         .default_value = "1",
         .help = "compute capacity per GPU as a multiple of 100 % (published in tessera.io/gpus)",
         .min = 0.01,
         .max = 100});
  s.Add({.path = kMemoryScalingKey,
         .type = Type::kFloat,
         .default_value = "1",
         .help = "virtual GPU memory as a multiple of each GPU's physical memory, 1 to 10: pods "
                 "are placed against physical x scaling, and a container's memory beyond what "
                 "the GPU has free is served from host memory, which counts against the pod's "
                 "memory limit (docs/node-agent.md)"});
  s.AddRule(MemoryScalingInRange);
  s.Add({.path = "node.fail-on-init-error",
         .type = Type::kBool,
         .default_value = "true",
         .help = "no NVML or no GPU ends the agent (false: log it and serve no devices)"});
  s.Add({.path = "node.cdi",
         .type = Type::kBool,
         .default_value = "true",
         .help = "give GPUs through a CDI device (false: NVIDIA_VISIBLE_DEVICES at Allocate)"});
  s.Add({.path = "node.library-path",
         .type = Type::kString,
         .default_value = "/usr/local/lib/tessera/libtessera-cuda.so",
         .help = "libtessera-cuda.so on the host, mounted into every GPU container"});
  s.Add({.path = "node.driver-root",
         .type = Type::kString,
         .default_value = "/",
         .help = "where the driver's device nodes are on the host (<root>/dev/nvidia*), e.g. "
                 "/run/nvidia/driver under a driver container"});
  s.Add({.path = "node.nvml-library",
         .type = Type::kString,
         .default_value = "libnvidia-ml.so.1",
         .help = "the NVML library to load (a path, or a name searched on the loader path)"});
  s.Add({.path = "node.xid-hold",
         .type = Type::kDuration,
         .default_value = "60s",
         .help = "how long a GPU stays unhealthy after a critical Xid event"});
  s.Add({.path = "node.metrics-listen",
         .type = Type::kString,
         .default_value = ":9394",
         .help = "HOST:PORT of the Prometheus metrics (/metrics); empty = off"});
  s.Add({.path = "node.housekeeping-interval",
         .type = Type::kDuration,
         .default_value = "30s",
         .help = "how often the files of containers that are gone are removed"});
  s.Add({.path = "node.pid-refresh",
         .type = Type::kDuration,
         .default_value = "1s",
         .help = "how often each running container's pids file (host PIDs) is refreshed",
         .min = 0.001});
  s.Add({.path = "node.memory-guard.action",
         .type = Type::kString,
         .default_value = "kill",
         .help = "what the host-side check does when a container's processes hold more GPU memory "
                 "than its limit (as the driver reports them): kill its processes that hold the "
                 "excess, report it (log, event, metric), or off",
         .allowed = {"kill", "report", "off"}});
  s.Add({.path = "node.memory-guard.interval",
         .type = Type::kDuration,
         .default_value = "2s",
         .help = "how often the host-side check asks the driver what each container holds",
         .min = 0.1,
         .max = 600});
  s.Add({.path = "node.memory-guard.checks",
         .type = Type::kInt,
         .default_value = "2",
         .help = "checks in a row a container must be over its limit before the check acts",
         .min = 1,
         .max = 10});
  s.Add({.path = "node.memory-guard.tolerance",
         .type = Type::kBytes,
         .default_value = "512Mi",
         .help = "how far over its limit a container may be before it counts as over: room for "
                 "device memory the library does not charge (module images, driver-internal "
                 "allocations)",
         .min = 0,
         .max = 64.0 * (1ull << 30)});
  s.Add({.path = "node.cgroup-root",
         .type = Type::kString,
         .default_value = "/sys/fs/cgroup",
         .help = "where the cgroup file system is mounted (v1 or v2), to find containers' PIDs"});
  s.Add({.path = "node.kubelet-cgroup-root",
         .type = Type::kString,
         .default_value = "/",
         .help = "kubelet's cgroupRoot (--cgroup-root), the cgroup above kubepods"});
  s.Add({.path = "node.sysfs-root",
         .type = Type::kString,
         .default_value = "/sys",
         .help = "the host's sysfs, to read each GPU's PCIe root complex for the ResourceSlice's "
                 "resource.kubernetes.io/pcieRoot"});
  s.Add({.path = "node.proc-root",
         .type = Type::kString,
         .default_value = "/proc",
         .help = "the host's /proc, to read each container process's PID in its namespace"});
  s.Add({.path = "node.annotation-key-file",
         .type = Type::kString,
         .default_value = "",
         .help = "file of base64 keys (one a line, the first signs) shared with the scheduler's "
                 "scheduler.annotation-key-file: tessera.io/allocated, allocation-failed and gpus "
                 "are signed and tessera.io/allocation is verified; empty = trusted unsigned"});
  s.Add({.path = "node.mig.mode",
         .type = Type::kString,
         .default_value = "none",
         .help = "MIG on every GPU not named in node.mig.gpus: none (Tessera leaves MIG as it "
                 "is), fixed (the agent brings the GPU to node.mig.layout at its start) or "
                 "dynamic (MIG mode on; instances made per pod; docs/mig.md)",
         .allowed = {"none", "fixed", "dynamic"}});
  s.Add({.path = "node.mig.layout",
         .type = Type::kString,
         .default_value = "",
         .help = "the MIG layout of fixed mode, in src/mig's text form: all-balanced, "
                 "all-1g.10gb, 1g.10gb=2,3g.40gb or 3g.40gb@0,1g.10gb@4 (docs/mig.md)"});
  s.Add({.path = "node.mig.gpus",
         .type = Type::kString,
         .default_value = "",
         .help = "per-GPU MIG modes, entries separated by ';': GPU=MODE with GPU an NVML index "
                 "or a GPU- UUID and MODE none, dynamic, fixed (node.mig.layout) or "
                 "fixed:LAYOUT, e.g. \"0=fixed:1g.10gb=2,3g.40gb;1=none\""});
  s.Add({.path = "node.mig.minors-file",
         .type = Type::kString,
         .default_value = "/proc/driver/nvidia-caps/mig-minors",
         .help = "the driver's table of MIG capability minors, which numbers the "
                 "/dev/nvidia-caps/nvidia-cap<N> nodes a MIG device needs in a container"});
  s.Add({.path = "node.dialects.vgpu.enabled",
         .type = Type::kBool,
         .default_value = "true",
         .help = "advertise vGPU slots"});
  s.Add({.path = "node.dialects.vgpu.resource",
         .type = Type::kString,
         .default_value = "nvidia.com/gpu",
         .help = "the vGPU slot resource"});
  s.Add({.path = "node.dialects.vcuda.enabled",
         .type = Type::kBool,
         .default_value = "true",
         .help = "advertise vcuda core and memory units"});
  s.Add({.path = "node.dialects.vcuda.core-resource",
         .type = Type::kString,
         .default_value = "tencent.com/vcuda-core",
         .help = "vcuda cores (100 per GPU)"});
  s.Add({.path = "node.dialects.vcuda.memory-resource",
         .type = Type::kString,
         .default_value = "tencent.com/vcuda-memory",
         .help = "vcuda memory (one per 256 MiB)"});
  s.Add({.path = "node.dialects.gpushare.enabled",
         .type = Type::kBool,
         .default_value = "true",
         .help = "advertise gpushare memory units"});
  s.Add({.path = "node.dialects.gpushare.resource",
         .type = Type::kString,
         .default_value = "aliyun.com/gpu-mem",
         .help = "gpushare memory (one per GiB)"});
}

Result<AgentOptions> OptionsFromConfig(const config::Config& c, const std::string& env_node_name) {
  RETURN_IF_ERROR(MemoryScalingInRange(c));
  AgentOptions o;
  o.mode = c.GetString("node.mode") == "dra" ? NodeMode::kDra : NodeMode::kDevicePlugin;
  o.allocator.node_name = c.GetString("node.node-name");
  if (o.allocator.node_name.empty()) o.allocator.node_name = env_node_name;
  if (o.allocator.node_name.empty()) {
    return InvalidArgument("node.node-name is empty and $NODE_NAME is not set: give --node-name");
  }
  o.allocator.state_dir = c.GetString("node.state-dir");
  o.allocator.cdi_dir = c.GetString("node.cdi-dir");
  o.allocator.library_path = c.GetString("node.library-path");
  o.allocator.driver_root = c.GetString("node.driver-root");
  o.allocator.cdi = c.GetBool("node.cdi");
  o.allocator.split_count = static_cast<int>(c.GetInt("node.device-split-count"));
  ASSIGN_OR_RETURN(o.allocator.signing,
                   annotations::Signing::FromKeyFile(c.GetString("node.annotation-key-file")));
  o.kubelet_dir = c.GetString("node.kubelet-dir");
  o.dra_unhealthy_taint = c.GetString("node.dra.unhealthy-taint");
  o.dra_instance_uid = c.GetString("node.dra.instance-uid");
  o.cores_scaling = c.GetFloat("node.device-cores-scaling");
  o.memory_scaling = c.GetFloat(kMemoryScalingKey);
  o.fail_on_init_error = c.GetBool("node.fail-on-init-error");
  ASSIGN_OR_RETURN(o.mig,
                   ParseMigConfig(c.GetString("node.mig.mode"), c.GetString("node.mig.layout"),
                                  c.GetString("node.mig.gpus")));
  o.mig.minors_file = c.GetString("node.mig.minors-file");
  o.xid_hold =
      std::chrono::duration_cast<std::chrono::milliseconds>(c.GetDuration("node.xid-hold"));
  o.housekeeping_interval =
      std::chrono::duration_cast<std::chrono::seconds>(c.GetDuration("node.housekeeping-interval"));
  if (o.housekeeping_interval.count() < 1) o.housekeeping_interval = std::chrono::seconds(1);
  o.pid_refresh =
      std::chrono::duration_cast<std::chrono::milliseconds>(c.GetDuration("node.pid-refresh"));
  if (o.pid_refresh.count() <= 0) {
    return InvalidArgument("node.pid-refresh " + c.ValueText("node.pid-refresh") +
                           ": must be at least 1ms (for example 1s)");
  }
  const std::string guard = c.GetString("node.memory-guard.action");
  o.memory_guard_on = guard != "off";
  o.memory_guard.action = guard == "report" ? GuardAction::kReport : GuardAction::kKill;
  o.memory_guard.strikes = static_cast<int>(c.GetInt("node.memory-guard.checks"));
  o.memory_guard.tolerance = c.GetBytes("node.memory-guard.tolerance");
  o.memory_guard_interval = std::chrono::duration_cast<std::chrono::milliseconds>(
      c.GetDuration("node.memory-guard.interval"));
  o.cgroup_root = c.GetString("node.cgroup-root");
  o.kubelet_cgroup_root = c.GetString("node.kubelet-cgroup-root");
  o.proc_root = c.GetString("node.proc-root");
  if (c.GetBool("node.dialects.vgpu.enabled")) {
    o.resources.push_back({c.GetString("node.dialects.vgpu.resource"), ResourceKind::kVgpuSlots});
  }
  if (c.GetBool("node.dialects.vcuda.enabled")) {
    o.resources.push_back(
        {c.GetString("node.dialects.vcuda.core-resource"), ResourceKind::kVcudaCore});
    o.resources.push_back(
        {c.GetString("node.dialects.vcuda.memory-resource"), ResourceKind::kVcudaMemory});
  }
  if (c.GetBool("node.dialects.gpushare.enabled")) {
    o.resources.push_back(
        {c.GetString("node.dialects.gpushare.resource"), ResourceKind::kGpuMemGiB});
  }
  if (o.resources.empty()) {
    return InvalidArgument("every dialect is disabled (node.dialects.*.enabled): nothing to serve");
  }
  for (const ResourceSpec& r : o.resources) {
    if (r.name.find('/') == std::string::npos) {
      return InvalidArgument("resource name \"" + r.name +
                             "\" must be domain-prefixed, like nvidia.com/gpu");
    }
  }
  return o;
}

}  // namespace tessera::node
