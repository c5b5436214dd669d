#include "scheduler/scheduler_app.h"

#include "kube/resource.h"

namespace tessera::scheduler {
namespace {

kube::InformerHandlers Feed(ClusterState& state, bool nodes) {
  auto apply = [&state, nodes](EventType type, const kube::Json& object) {
    // Bad objects are logged inside the state and skipped; the watch goes on.
    (void)(nodes ? state.OnNode(type, object) : state.OnPod(type, object));
  };
  return {.on_add = [apply](const kube::Json& o) { apply(EventType::kAdded, o); },
          .on_update = [apply](const kube::Json&,
                               const kube::Json& o) { apply(EventType::kModified, o); },
          .on_delete = [apply](const kube::Json& o) { apply(EventType::kDeleted, o); }};
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
  return o;
}

SchedulerApp::SchedulerApp(kube::Client& client, AppOptions options)
    : state_(options.dialects, options.signing),
      binder_(client),
      metrics_(options.signing),
      engine_(state_, binder_, options.engine, &metrics_),
      extender_(engine_, state_, metrics_),
      webhook_(state_, options.scheduler_name, options.trusted_users),
      server_(options.server, extender_, webhook_, state_, metrics_),
      nodes_(std::make_unique<kube::Informer>(
          client, kube::kNodes, kube::InformerOptions{.name = "nodes"}, Feed(state_, true))),
      pods_(std::make_unique<kube::Informer>(
          client, kube::kPods, kube::InformerOptions{.name = "pods"}, Feed(state_, false))) {}

SchedulerApp::~SchedulerApp() {
  Stop();
}

Status SchedulerApp::Start() {
  RETURN_IF_ERROR(server_.Start());
  nodes_->Start();
  pods_->Start();
  return Status::Ok();
}

bool SchedulerApp::WaitForSync(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!nodes_->WaitForSync(timeout)) return false;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (!pods_->WaitForSync(std::max(left, std::chrono::milliseconds(0)))) return false;
  server_.SetReady(true);
  return true;
}

void SchedulerApp::Stop() {
  server_.Stop();
  nodes_->Stop();
  pods_->Stop();
}

}  // namespace tessera::scheduler
