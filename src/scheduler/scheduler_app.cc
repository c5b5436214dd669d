#include "scheduler/scheduler_app.h"

#include <unistd.h>

#include <thread>

#include "annotations/names.h"
#include "kube/resource.h"
#include "log/log.h"

namespace tessera::scheduler {
namespace {

// `filters` (pods only, may be null) forgets the last filter of a pod that is placed or gone.
// `resizer` (pods only, may be null) answers resize requests, after the state has the event.
kube::InformerHandlers Feed(ClusterState& state, QuotaLedger& quotas, bool nodes,
                            FilterMemory* filters = nullptr, Resizer* resizer = nullptr) {
  auto apply = [&state, &quotas, nodes, filters, resizer](EventType type,
                                                          const kube::Json& object) {
    // Bad objects are logged inside the state and skipped; the watch goes on.
    (void)(nodes ? state.OnNode(type, object) : state.OnPod(type, object));
    nodes ? quotas.OnNode(type, object) : quotas.OnPod(type, object);
    if (filters) filters->OnPod(type, object);
    if (resizer) resizer->OnPod(type, object);
  };
  return {.on_add = [apply](const kube::Json& o) { apply(EventType::kAdded, o); },
          .on_update = [apply](const kube::Json&,
                               const kube::Json& o) { apply(EventType::kModified, o); },
          .on_delete = [apply](const kube::Json& o) { apply(EventType::kDeleted, o); }};
}

template <typename Options>
Options WithLeadership(Options options, const Leadership& leadership) {
  options.leadership = &leadership;
  return options;
}

// The bound on a Binding's and a resize answer's call: with several replicas each must be answered
// before another replica may take over (the leader stops at renew-deadline, a follower takes the
// Lease at lease-duration). 0, the client's own, with one replica.
std::chrono::milliseconds CallTimeout(const AppOptions& options) {
  return options.elected ? (options.election.lease_duration - options.election.renew_deadline) / 2
                         : std::chrono::milliseconds(0);
}

}  // namespace

AppOptions AppOptions::FromConfig(const config::Config& cfg) {
  AppOptions o;
  o.server.listen = cfg.GetString("scheduler.listen");
  o.server.tls_cert = cfg.GetString("scheduler.tls.cert");
  o.server.tls_key = cfg.GetString("scheduler.tls.key");
  o.server.client_ca = cfg.GetString("scheduler.tls.client-ca");
  o.server.extender_clients = cfg.GetList("scheduler.tls.extender-clients");
  o.server.webhook_clients = cfg.GetList("scheduler.tls.webhook-clients");
  o.server.max_body = cfg.GetBytes("scheduler.max-body");
  o.server.ui = cfg.GetBool("scheduler.ui.enabled");
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  o.server.limits.request_timeout =
      duration_cast<milliseconds>(cfg.GetDuration("scheduler.http.request-timeout"));
  o.server.limits.write_timeout = o.server.limits.request_timeout;
  o.server.limits.idle_timeout =
      duration_cast<milliseconds>(cfg.GetDuration("scheduler.http.idle-timeout"));
  o.server.limits.max_connections =
      static_cast<size_t>(cfg.GetInt("scheduler.http.max-connections"));
  // The schema allows only binpack and spread.
  o.engine.node_policy = ParsePolicy(cfg.GetString("scheduler.node-policy")).value();
  o.engine.gpu_policy = ParsePolicy(cfg.GetString("scheduler.gpu-policy")).value();
  o.dialects = DialectConfig::FromConfig(cfg);
  o.scheduler_name = cfg.GetString("scheduler.name");
  o.engine.scheduler_name = o.scheduler_name;
  o.trusted_users = cfg.GetList("scheduler.webhook.trusted-users");
  o.gpu_node_selector = cfg.GetBool("scheduler.webhook.gpu-node-selector");
  // The schema allows only off, opt-in and on.
  o.dra = ParseDraMode(cfg.GetString("scheduler.webhook.dra")).value();
  o.read_access = ParseReadAccess(cfg.GetString("scheduler.read-access")).value();
  o.preemption = cfg.GetBool("scheduler.preemption.enabled");
  o.preemptor.gpu_policy = o.engine.gpu_policy;
  o.preemptor.nomination_ttl = std::chrono::duration_cast<std::chrono::seconds>(
      cfg.GetDuration("scheduler.preemption.nomination-ttl"));
  o.shutdown_delay = std::chrono::duration_cast<std::chrono::milliseconds>(
      cfg.GetDuration("scheduler.shutdown-delay"));
  o.elected = cfg.GetBool("scheduler.leader-election.enabled");
  const std::string lease = cfg.GetString("scheduler.leader-election.lease");
  o.election.lease_namespace = lease.substr(0, lease.find('/'));
  o.election.lease_name = lease.substr(lease.find('/') + 1);
  o.pod_name = cfg.GetString("scheduler.leader-election.pod-name");
  o.pod_namespace = cfg.GetString("scheduler.leader-election.pod-namespace");
  o.election.identity = cfg.GetString("scheduler.leader-election.identity");
  if (o.election.identity.empty()) o.election.identity = o.pod_name;
  if (o.election.identity.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    o.election.identity = host;
  }
  o.election.lease_duration =
      duration_cast<milliseconds>(cfg.GetDuration("scheduler.leader-election.lease-duration"));
  o.election.renew_deadline =
      duration_cast<milliseconds>(cfg.GetDuration("scheduler.leader-election.renew-deadline"));
  o.election.retry_period =
      duration_cast<milliseconds>(cfg.GetDuration("scheduler.leader-election.retry-period"));
  return o;
}

Status KubeClaimTemplates::Create(const nlohmann::json& claim_template) {
  std::string ns = claim_template["metadata"].value("namespace", "");
  Result<kube::Json> created = client_.Create(kube::kResourceClaimTemplates, ns, claim_template,
                                              {.timeout = std::chrono::seconds(3)});
  if (created.ok() || created.status().code() == StatusCode::kAlreadyExists) return Status::Ok();
  return created.status();
}

Status KubeEvictor::Evict(const Eviction& e) {
  const kube::Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", e.victim.name}, {"namespace", e.victim.ns}, {"uid", e.victim.uid}}}};
  // As kube-scheduler marks its victims, so that controllers can tell why the pod ends; a pod
  // that is gone already fails the DELETE below with NotFound.
  kube::Json condition = {{"type", "DisruptionTarget"},
                          {"status", "True"},
                          {"reason", "PreemptionByScheduler"},
                          {"message", "Tessera scheduler: " + e.message}};
  Result<kube::Json> marked = client_.SetPodCondition(e.victim.ns, e.victim.name, condition);
  if (!marked.ok() && marked.status().code() == StatusCode::kNotFound) return Status::Ok();
  Status deleted = client_.DeletePod(e.victim.ns, e.victim.name, e.victim.uid);
  if (!deleted.ok()) {
    return deleted.code() == StatusCode::kNotFound ? Status::Ok() : deleted;
  }
  (void)client_.CreateEvent(pod, "Normal", "Preempted", e.message, "tessera-scheduler");
  return Status::Ok();
}

SchedulerApp::SchedulerApp(kube::Client& client, AppOptions options)
    : client_(client),
      options_(options),
      leadership_(options.elected, [this] { return elector_ ? elector_->Leader() : ""; }),
      state_(options.dialects, options.signing),
      binder_(client, CallTimeout(options)),
      evictor_(client),
      metrics_(options.signing),
      engine_(state_, binder_, WithLeadership(options.engine, leadership_), &metrics_),
      preemptor_(options.preemption ? std::make_unique<Preemptor>(
                                          state_, evictor_,
                                          WithLeadership(options.preemptor, leadership_), &metrics_)
                                    : nullptr),
      filter_memory_(state_),
      fit_(engine_, state_, &dra_shares_),
      read_authorizer_(options.read_access == ReadAccess::kToken
                           ? std::make_unique<KubeReadAuthorizer>(client)
                           : nullptr),
      extender_(engine_, state_, metrics_, preemptor_.get(), &filter_memory_),
      claim_templates_(client),
      quota_ledger_(options.dialects, std::chrono::seconds(60), std::chrono::steady_clock::now,
                    options.signing),
      quota_source_(client, quota_ledger_, &dra_shares_),
      resize_writer_(client, CallTimeout(options)),
      resizer_(state_, &quota_ledger_, resize_writer_, &leadership_),
      webhook_(state_, options.scheduler_name, options.trusted_users, options.gpu_node_selector,
               {.mode = options.dra, .templates = &claim_templates_, .metrics = &metrics_},
               &quota_ledger_),
      server_(options.server, extender_, webhook_, state_, metrics_, &quota_ledger_),
      nodes_(std::make_unique<kube::Informer>(client, kube::kNodes,
                                              kube::InformerOptions{.name = "nodes"},
                                              Feed(state_, quota_ledger_, true))),
      pods_(std::make_unique<kube::Informer>(
          client, kube::kPods, kube::InformerOptions{.name = "pods"},
          Feed(state_, quota_ledger_, false, &filter_memory_, &resizer_))) {
  server_.SetReadServices({.filters = &filter_memory_,
                           .dra = &dra_shares_,
                           .fit = &fit_,
                           .authorizer = read_authorizer_.get()});
}

SchedulerApp::~SchedulerApp() {
  Stop();
}

Status SchedulerApp::Start() {
  kube::LeaderElectionConfig election = options_.election;
  if (options_.elected) {
    // Made before the server starts: its threads and the engine's read elector_.
    election.on_started_leading = [this] { StartedLeading(); };
    election.on_stopped_leading = [this] { StoppedLeading(); };
    ASSIGN_OR_RETURN(elector_, kube::LeaderElector::Create(client_, election));
    server_.SetLiveness([this] {
      return elector_->RenewalOverdue(kStuckLeaderTolerance)
                 ? std::string("leading without renewing the lease: another replica may lead too")
                 : std::string();
    });
  }
  RETURN_IF_ERROR(server_.Start());
  resizer_.Start();
  if (options_.read_access == ReadAccess::kOpen) {
    log::Warn(
        "GET /inspect and POST /fit are open to whoever reaches the port "
        "(scheduler.read-access=open)",
        {{"port", std::to_string(server_.port())}});
  }
  if (options_.server.ui) {
    log::Info("serving the web page of the cluster's GPUs (scheduler.ui.enabled)",
              {{"path", "/ui/"}, {"port", std::to_string(server_.port())}});
  }
  nodes_->Start();
  pods_->Start();
  quota_source_.Start();
  if (elector_) {
    log::Info("campaigning for leadership: only the leader binds and preempts",
              {{"lease", election.lease_namespace + "/" + election.lease_name},
               {"identity", election.identity}});
    elector_->Start();
  }
  return Status::Ok();
}

void SchedulerApp::StartedLeading() {
  // Every Binding the previous leader posted was answered before this replica could take the
  // Lease (it stops binding at renew-deadline, before lease-duration); a LIST now holds them all.
  while (!WaitForSync(std::chrono::seconds(5))) {
    if (stopping_) return;
    log::Warn("leading, but nodes and pods are not synced yet; binding waits");
  }
  Result<kube::ObjectList> pods = client_.List(kube::kPods, {});
  while (!pods.ok()) {
    if (stopping_) return;
    log::Warn("leading, but cannot list pods to catch up; binding waits",
              {{"error", pods.status().message()}});
    std::this_thread::sleep_for(std::chrono::seconds(1));
    pods = client_.List(kube::kPods, {});
  }
  for (const kube::Json& pod : pods->items) (void)state_.OnPod(EventType::kModified, pod);
  leadership_.Lead();
  // Resize requests that waited while no replica led, or that the last leader left unanswered.
  for (const kube::Json& pod : pods->items) resizer_.OnPod(EventType::kModified, pod);
  LabelPod(true);
  log::Info("leading: this replica binds and preempts",
            {{"pods-caught-up", std::to_string(pods->items.size())}});
}

void SchedulerApp::StoppedLeading() {
  leadership_.Follow();
  LabelPod(false);
  log::Warn("no longer leading: this replica binds and preempts nothing",
            {{"leader", elector_ ? elector_->Leader() : ""}});
}

void SchedulerApp::LabelPod(bool leader) {
  if (options_.pod_name.empty()) return;
  kube::StringMapChanges change;
  change[annotations::kLeaderLabel] = leader ? std::optional<std::string>("true") : std::nullopt;
  Result<kube::Json> patched =
      client_.PatchLabels(kube::kPods, options_.pod_namespace, options_.pod_name, change);
  if (!patched.ok()) {
    log::Warn("cannot label this replica's pod; the extender's Service may not reach the leader",
              {{"pod", options_.pod_namespace + "/" + options_.pod_name},
               {"label", annotations::kLeaderLabel},
               {"error", patched.status().message()}});
  }
}

bool SchedulerApp::WaitForSync(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!nodes_->WaitForSync(timeout)) return false;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (!pods_->WaitForSync(std::max(left, std::chrono::milliseconds(0)))) return false;
  left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                               std::chrono::steady_clock::now());
  // Before the quotas are known the webhook would let anything in.
  if (!quota_source_.WaitForSync(std::max(left, std::chrono::milliseconds(0)))) return false;
  server_.SetReady(true);
  return true;
}

void SchedulerApp::Drain() {
  if (elector_) elector_->Stop();
  server_.SetDraining();
}

void SchedulerApp::Stop() {
  stopping_ = true;
  if (elector_) elector_->Stop();  // a leader releases the Lease, so a follower takes over at once
  server_.Stop();
  nodes_->Stop();
  pods_->Stop();
  resizer_.Stop();
  quota_source_.Stop();
}

}  // namespace tessera::scheduler
