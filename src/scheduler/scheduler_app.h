// SchedulerApp: the whole `tessera scheduler` wired to a Kubernetes API server.
//
// Informers on nodes and pods feed the ClusterState (and the quota ledger and the resizer); the
// engine binds through the API server's
// pods/binding subresource (KubeBinder); the HTTP server answers kube-scheduler and the admission
// webhook, and reports ready once both informers and the ResourceQuotas (quota_source.h) have
// synced. The `tessera scheduler` command and
// the end-to-end tests (against testing/fakeapiserver) both run this class.
// Thread-safe after Start(); the Client must outlive the app.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "annotations/signing.h"
#include "common/status.h"
#include "config/config.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/leader_elector.h"
#include "scheduler/binder.h"
#include "scheduler/cluster_state.h"
#include "scheduler/dra_shares.h"
#include "scheduler/engine.h"
#include "scheduler/extender.h"
#include "scheduler/filter_memory.h"
#include "scheduler/fit_dry_run.h"
#include "scheduler/http_server.h"
#include "scheduler/kube_read_access.h"
#include "scheduler/kube_resize_writer.h"
#include "scheduler/metrics.h"
#include "scheduler/quota_ledger.h"
#include "scheduler/quota_source.h"
#include "scheduler/resizer.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {

struct AppOptions {
  ServerOptions server;
  EngineOptions engine;
  DialectConfig dialects;
  std::string scheduler_name = "tessera";
  std::vector<std::string> trusted_users =
      DefaultTrustedUsers();      // scheduler.webhook.trusted-users
  bool gpu_node_selector = true;  // scheduler.webhook.gpu-node-selector
  DraMode dra = DraMode::kOff;    // scheduler.webhook.dra
  // scheduler.read-access: who may read /inspect and /fit (read_access.h).
  ReadAccess read_access = ReadAccess::kToken;
  // The keys of scheduler.annotation-key-file, which the command loads (unsigned: none).
  annotations::Signing signing;
  bool preemption = true;
  PreemptorOptions preemptor;
  // scheduler.leader-election.*: off = one replica. The callbacks are the app's own.
  bool elected = false;
  kube::LeaderElectionConfig election;
  std::string pod_name, pod_namespace;  // the replica's pod, labelled while it leads
  // scheduler.shutdown-delay: how long a stopping replica still serves, not ready.
  std::chrono::milliseconds shutdown_delay{5000};

  // From the scheduler.* keys.
  static AppOptions FromConfig(const config::Config& cfg);
};

// Evictor over the real client: the DisruptionTarget condition, a DELETE with the victim's UID
// as precondition, and a Normal event "Preempted" on the victim.
class KubeEvictor : public Evictor {
 public:
  explicit KubeEvictor(kube::Client& client) : client_(client) {}
  Status Evict(const Eviction& eviction) override;

 private:
  kube::Client& client_;
};

// Binder over the real client: POST /api/v1/namespaces/<ns>/pods/<name>/binding, each within
// `timeout` (0: the client's own), retries included.
class KubeBinder : public Binder {
 public:
  KubeBinder(kube::Client& client, std::chrono::milliseconds timeout)
      : client_(client), timeout_(timeout) {}
  Status Bind(const BindingRequest& request) override {
    return client_.Bind(request.pod.ns, request.pod.name, request.pod.uid, request.node,
                        request.annotations, {.timeout = timeout_});
  }

 private:
  kube::Client& client_;
  const std::chrono::milliseconds timeout_;
};

// ClaimTemplates over the real client: POST to the namespace's resourceclaimtemplates, with the
// webhook's short time (its own call must answer within the webhook's timeoutSeconds).
class KubeClaimTemplates : public ClaimTemplates {
 public:
  explicit KubeClaimTemplates(kube::Client& client) : client_(client) {}
  Status Create(const nlohmann::json& claim_template) override;

 private:
  kube::Client& client_;
};

// How long past its lease duration a leader that has stopped renewing (its elector's thread is
// stuck) still counts as live: /healthz answers 503 after that, kubelet restarts the replica, and
// the other one, which has taken the expired Lease by then, leads alone. kube-scheduler's leader
// election health check allows the same 20 s.
inline constexpr std::chrono::milliseconds kStuckLeaderTolerance{20'000};

class SchedulerApp {
 public:
  SchedulerApp(kube::Client& client, AppOptions options);
  ~SchedulerApp();  // Stop()

  // Starts the HTTP server, then the informers, then (with leader election) the campaign for the
  // Lease. Errors from the server (address, TLS files) and from the election's settings.
  Status Start();
  // Waits until both informers and the ResourceQuotas have synced, then marks the server ready.
  // False on timeout.
  bool WaitForSync(std::chrono::milliseconds timeout);
  // The first step of stopping: a leader gives up the Lease (the other replica binds from now
  // on), /readyz answers 503, and the webhooks are still served.
  void Drain();
  void Stop();

  int port() const { return server_.port(); }
  bool tls() const { return server_.tls(); }
  ClusterState& state() { return state_; }
  const Leadership& leadership() const { return leadership_; }

 private:
  // Leader election's callbacks: leading starts after the state has caught up with every pod
  // the API server holds (a LIST), so that no binding of the replica that led before is missed.
  void StartedLeading();
  void StoppedLeading();
  void LabelPod(bool leader);

  kube::Client& client_;
  const AppOptions options_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<kube::LeaderElector> elector_;  // set by Start() when elected
  Leadership leadership_;
  ClusterState state_;
  KubeBinder binder_;
  KubeEvictor evictor_;
  Metrics metrics_;
  Engine engine_;
  std::unique_ptr<Preemptor> preemptor_;  // null when scheduler.preemption.enabled is false
  FilterMemory filter_memory_;            // the pending pods' last filters, for /inspect
  DraShareTable dra_shares_;              // fed by quota_source_'s claim informer
  FitDryRun fit_;
  std::unique_ptr<KubeReadAuthorizer> read_authorizer_;  // null with scheduler.read-access=open
  Extender extender_;
  KubeClaimTemplates claim_templates_;
  QuotaLedger quota_ledger_;
  QuotaSource quota_source_;
  KubeResizeWriter resize_writer_;
  Resizer resizer_;  // answers resize requests while this replica leads (docs/resize.md)
  Webhook webhook_;
  HttpServer server_;
  std::unique_ptr<kube::Informer> nodes_;
  std::unique_ptr<kube::Informer> pods_;
};

}  // namespace tessera::scheduler
