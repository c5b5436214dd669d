#include "scheduler/config_keys.h"

#include "config/config.h"
#include "scheduler/dialect.h"

namespace tessera::scheduler {

void AddSchedulerKeys(config::Schema& s) {
  using config::Type;
  s.Add({.path = "scheduler.name",
         .type = Type::kString,
         .default_value = "tessera",
         .help = "schedulerName the admission webhook sets on pods that ask for a Tessera resource",
         .non_empty = true});
  s.Add({.path = "scheduler.listen",
         .type = Type::kString,
         .default_value = "0.0.0.0:8443",
         .help = "host:port of the extender, webhook and metrics HTTP server (port 0 = any)",
         .non_empty = true,
         .flags = {"listen"}});
  s.Add({.path = "scheduler.tls.cert",
         .type = Type::kString,
         .default_value = "",
         .help = "PEM certificate file; with scheduler.tls.key the server speaks HTTPS"});
  s.Add({.path = "scheduler.tls.key",
         .type = Type::kString,
         .default_value = "",
         .help = "PEM private key file for scheduler.tls.cert"});
  s.Add({.path = "scheduler.tls.client-ca",
         .type = Type::kString,
         .default_value = "",
         .help = "PEM CA bundle that signs client certificates; when set, the extender and "
                 "webhook endpoints serve only the clients that scheduler.tls.extender-clients "
                 "and scheduler.tls.webhook-clients name"});
  s.Add({.path = "scheduler.tls.extender-clients",
         .type = Type::kList,
         .default_value = "tessera-kube-scheduler",
         .help = "with scheduler.tls.client-ca: certificate names (common name or DNS "
                 "subjectAltName) that may call /filter, /prioritize and /bind; * = any "
                 "certificate of the CA; empty = no client certificate asked"});
  s.Add({.path = "scheduler.tls.webhook-clients",
         .type = Type::kList,
         .default_value = "",
         .help = "with scheduler.tls.client-ca: certificate names that may call /mutate and "
                 "/validate (the API server's webhook client certificate, docs/install.md); * = "
                 "any certificate of the CA; empty = no client certificate asked"});
  s.Add(
      {.path = "scheduler.node-policy",
       .type = Type::kString,
       .default_value = "binpack",
       .help = "how prioritize scores nodes: binpack fills busy nodes first, spread the idle ones",
       .allowed = {"binpack", "spread"}});
  s.Add({.path = "scheduler.gpu-policy",
         .type = Type::kString,
         .default_value = "binpack",
         .help = "how bind picks GPUs on a node: binpack (fullest GPU that fits) or spread",
         .allowed = {"binpack", "spread"}});
  s.Add({.path = "scheduler.preemption.enabled",
         .type = Type::kBool,
         .default_value = "true",
         .help =
             "a GPU pod that fits nowhere evicts the fewest lower-priority GPU pods whose shares "
             "make it fit on one node (kube-scheduler's own preemption cannot see GPUs); "
             "false: GPU pods never preempt"});
  s.Add({.path = "scheduler.preemption.nomination-ttl",
         .type = Type::kDuration,
         .default_value = "5m",
         .help = "how long the GPUs freed by a preemption are held for the preempting pod while "
                 "it is not bound",
         .min = 1,
         .max = 86400});
  s.Add({.path = "scheduler.leader-election.enabled",
         .type = Type::kBool,
         .default_value = "false",
         .help = "run as one of several replicas: only the holder of the Lease binds and preempts "
                 "(and carries the label tessera.io/scheduler-leader=true that the extender's "
                 "Service selects); the others keep their state current and take over when it "
                 "goes"});
  s.Add({.path = "scheduler.leader-election.lease",
         .type = Type::kString,
         .default_value = "tessera-system/tessera-scheduler",
         .help = "the coordination.k8s.io Lease the replicas compete for, namespace/name"});
  s.Add({.path = "scheduler.leader-election.identity",
         .type = Type::kString,
         .default_value = "",
         .help = "this replica's name in the Lease; empty = scheduler.leader-election.pod-name, "
                 "else the host name"});
  s.Add({.path = "scheduler.leader-election.pod-name",
         .type = Type::kString,
         .default_value = "",
         .help = "this replica's own pod (from the downward API), which the leader labels "
                 "tessera.io/scheduler-leader=true; empty = no label (a scheduler outside a pod)"});
  s.Add({.path = "scheduler.leader-election.pod-namespace",
         .type = Type::kString,
         .default_value = "tessera-system",
         .help = "the namespace of scheduler.leader-election.pod-name"});
  s.Add({.path = "scheduler.leader-election.lease-duration",
         .type = Type::kDuration,
         .default_value = "15s",
         .help = "how long followers wait after the leader's last renewal before taking over",
         .min = 1,
         .max = 600});
  s.Add({.path = "scheduler.leader-election.renew-deadline",
         .type = Type::kDuration,
         .default_value = "10s",
         .help = "a leader that cannot renew for this long stops binding; less than "
                 "lease-duration by more than a bind's API call may take",
         .min = 1,
         .max = 600});
  s.Add({.path = "scheduler.leader-election.retry-period",
         .type = Type::kDuration,
         .default_value = "2s",
         .help = "how often the leader renews and followers try",
         .min = 0.1,
         .max = 60});
  s.Add({.path = "scheduler.max-body",
         .type = Type::kBytes,
         .default_value = "4Mi",
         .help = "largest accepted HTTP request body; larger ones get HTTP 400",
         .min = 1024,
         .max = 1 << 30});

  s.Add({.path = "scheduler.ui.enabled",
         .type = Type::kBool,
         .default_value = "false",
         .help = "serve the read-only web page of the cluster's GPUs under /ui/ on "
                 "scheduler.listen; its files hold no data, it shows /inspect and asks /fit, "
                 "which scheduler.read-access guards (docs/ui.md)"});
  s.Add({.path = "scheduler.read-access",
         .type = Type::kString,
         .default_value = "token",
         .help = "who may read GET /inspect and POST /fit: token = a Kubernetes bearer token "
                 "that a TokenReview authenticates and a SubjectAccessReview allows (get or "
                 "create on tessera.io scheduler/inspect, scheduler/fit); open = whoever reaches "
                 "the port (docs/ui.md)",
         .allowed = {"token", "open"}});
  s.Add({.path = "scheduler.shutdown-delay",
         .type = Type::kDuration,
         .default_value = "5s",
         .help = "on SIGTERM the scheduler answers /readyz with 503 and goes on serving this long "
                 "before it stops, while Services and the API server's webhook calls still reach "
                 "it (a rollout, a deleted replica); a second signal stops it at once. Keep it "
                 "below the pod's terminationGracePeriodSeconds",
         .min = 0,
         .max = 300});
  s.Add({.path = "scheduler.http.request-timeout",
         .type = Type::kDuration,
         .default_value = "10s",
         .help = "time a client has for the TLS handshake, and for each request's headers and "
                 "body, and the server for each answer",
         .min = 0.001,
         .max = 600});
  s.Add({.path = "scheduler.http.idle-timeout",
         .type = Type::kDuration,
         .default_value = "30s",
         .help = "a kept-alive connection that sends no new request for this long is closed",
         .min = 0.001,
         .max = 3600});
  s.Add({.path = "scheduler.http.max-connections",
         .type = Type::kInt,
         .default_value = "1024",
         .help = "connections served at once, each on its own thread; more are refused (503)",
         .min = 16,
         .max = 65536});

  s.Add({.path = "scheduler.webhook.trusted-users",
         .type = Type::kList,
         .default_value = "system:serviceaccount:tessera-system:tessera-scheduler,"
                          "system:serviceaccount:tessera-system:tessera-node",
         .help = "users (as the API server names them) that may set or change "
                 "tessera.io/allocation, allocated and allocation-failed on pods"});
  s.Add({.path = "scheduler.webhook.gpu-node-selector",
         .type = Type::kBool,
         .default_value = "true",
         .help = "the webhook gives GPU pods the nodeSelector tessera.io/gpu-node=true (the label "
                 "the node agent puts on nodes with GPUs), so that kube-scheduler's own filters "
                 "leave CPU-only nodes out before it samples and calls the extender; false for "
                 "node agents older than the label"});
  s.Add({.path = "scheduler.webhook.dra",
         .type = Type::kString,
         .default_value = "off",
         .help = "DRA mode of the webhook (docs/dra.md): on = GPU pods become claims of "
                 "gpu.tessera.io made from ResourceClaimTemplates it creates, and skip the "
                 "extender, except pods labelled tessera.io/webhook=device-plugin; opt-in = only "
                 "pods labelled tessera.io/webhook=dra; off = none",
         .allowed = {"off", "opt-in", "on"}});
  s.Add({.path = "scheduler.annotation-key-file",
         .type = Type::kString,
         .default_value = "",
         .help = "file of base64 keys (one a line, the first signs) shared with the node agents' "
                 "node.annotation-key-file: tessera.io/allocation is signed and the annotations "
                 "read are verified; empty = trusted unsigned"});

  s.Add({.path = "scheduler.dialects.vgpu.enabled",
         .type = Type::kBool,
         .default_value = "true",
         .help = "accept the vGPU (HAMi/4paradigm) resources"});
  s.Add({.path = "scheduler.dialects.vgpu.count-resource",
         .type = Type::kString,
         .default_value = "nvidia.com/gpu",
         .help = "vGPU: number of distinct physical GPUs"});
  s.Add({.path = "scheduler.dialects.vgpu.memory-resource",
         .type = Type::kString,
         .default_value = "nvidia.com/gpumem",
         .help = "vGPU: memory per GPU in MiB"});
  s.Add({.path = "scheduler.dialects.vgpu.memory-percentage-resource",
         .type = Type::kString,
         .default_value = "nvidia.com/gpumem-percentage",
         .help = "vGPU: memory per GPU as a percent of the GPU's memory"});
  s.Add({.path = "scheduler.dialects.vgpu.cores-resource",
         .type = Type::kString,
         .default_value = "nvidia.com/gpucores",
         .help = "vGPU: compute percent per GPU (100 = exclusive)"});

  s.Add({.path = "scheduler.dialects.vcuda.enabled",
         .type = Type::kBool,
         .default_value = "true",
         .help = "accept the vcuda (TKEStack) resources"});
  s.Add({.path = "scheduler.dialects.vcuda.core-resource",
         .type = Type::kString,
         .default_value = "tencent.com/vcuda-core",
         .help = "vcuda: below 100 a share of one GPU, a multiple of 100 that many whole GPUs"});
  s.Add({.path = "scheduler.dialects.vcuda.memory-resource",
         .type = Type::kString,
         .default_value = "tencent.com/vcuda-memory",
         .help = "vcuda: memory in units"});
  s.Add({.path = "scheduler.dialects.vcuda.memory-unit",
         .type = Type::kBytes,
         .default_value = "256Mi",
         .help = "vcuda: size of one memory unit",
         .min = 1048576,
         .max = 1ull << 40});
  s.Add({.path = "scheduler.dialects.vcuda.core-limit-annotation",
         .type = Type::kString,
         .default_value = "tencent.com/vcuda-core-limit",
         .help = "vcuda: pod annotation that makes the compute limit elastic (burst up to it)",
         .non_empty = true});

  s.Add({.path = "scheduler.dialects.gpushare.enabled",
         .type = Type::kBool,
         .default_value = "true",
         .help = "accept the gpushare (Aliyun) resource"});
  s.Add({.path = "scheduler.dialects.gpushare.memory-resource",
         .type = Type::kString,
         .default_value = "aliyun.com/gpu-mem",
         .help = "gpushare: memory on one GPU in units"});
  s.Add({.path = "scheduler.dialects.gpushare.memory-unit",
         .type = Type::kBytes,
         .default_value = "1Gi",
         .help = "gpushare: size of one unit (1Gi, or 1Mi for MiB mode)",
         .min = 1048576,
         .max = 1ull << 40});
  AddSchedulerRules(s);
}

DialectConfig DialectConfig::FromConfig(const config::Config& cfg) {
  constexpr uint64_t kMiB = 1024 * 1024;
  DialectConfig d;
  d.vgpu_enabled = cfg.GetBool("scheduler.dialects.vgpu.enabled");
  d.vgpu_count = cfg.GetString("scheduler.dialects.vgpu.count-resource");
  d.vgpu_memory = cfg.GetString("scheduler.dialects.vgpu.memory-resource");
  d.vgpu_memory_percent = cfg.GetString("scheduler.dialects.vgpu.memory-percentage-resource");
  d.vgpu_cores = cfg.GetString("scheduler.dialects.vgpu.cores-resource");
  d.vcuda_enabled = cfg.GetBool("scheduler.dialects.vcuda.enabled");
  d.vcuda_core = cfg.GetString("scheduler.dialects.vcuda.core-resource");
  d.vcuda_memory = cfg.GetString("scheduler.dialects.vcuda.memory-resource");
  d.vcuda_memory_unit_mib = cfg.GetBytes("scheduler.dialects.vcuda.memory-unit") / kMiB;
  d.vcuda_core_limit_annotation = cfg.GetString("scheduler.dialects.vcuda.core-limit-annotation");
  d.gpushare_enabled = cfg.GetBool("scheduler.dialects.gpushare.enabled");
  d.gpushare_memory = cfg.GetString("scheduler.dialects.gpushare.memory-resource");
  d.gpushare_unit_mib = cfg.GetBytes("scheduler.dialects.gpushare.memory-unit") / kMiB;
  return d;
}

}  // namespace tessera::scheduler
