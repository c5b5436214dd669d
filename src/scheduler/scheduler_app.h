// SchedulerApp: the whole `tessera scheduler` wired to a Kubernetes API server.
//
// Informers on nodes and pods feed the ClusterState; the engine binds through the API server's
// pods/binding subresource (KubeBinder); the HTTP server answers kube-scheduler and the admission
// webhook, and reports ready once both informers have synced. The `tessera scheduler` command and
// the end-to-end tests (against testing/fakeapiserver) both run this class.
// Thread-safe after Start(); the Client must outlive the app.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "annotations/signing.h"
#include "common/status.h"
#include "config/config.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "scheduler/binder.h"
#include "scheduler/cluster_state.h"
#include "scheduler/engine.h"
#include "scheduler/extender.h"
#include "scheduler/http_server.h"
#include "scheduler/metrics.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {

struct AppOptions {
  ServerOptions server;
  EngineOptions engine;
  DialectConfig dialects;
  std::string scheduler_name = "tessera";
  std::vector<std::string> trusted_users =
      DefaultTrustedUsers();  // scheduler.webhook.trusted-users
  // The keys of scheduler.annotation-key-file, which the command loads (unsigned: none).
  annotations::Signing signing;

  // From the scheduler.* keys.
  static AppOptions FromConfig(const config::Config& cfg);
};

// Binder over the real client: POST /api/v1/namespaces/<ns>/pods/<name>/binding.
class KubeBinder : public Binder {
 public:
  explicit KubeBinder(kube::Client& client) : client_(client) {}
  Status Bind(const BindingRequest& request) override {
    return client_.Bind(request.pod.ns, request.pod.name, request.pod.uid, request.node,
                        request.annotations);
  }

 private:
  kube::Client& client_;
};

class SchedulerApp {
 public:
  SchedulerApp(kube::Client& client, AppOptions options);
  ~SchedulerApp();  // Stop()

  // Starts the HTTP server, then the informers. Errors from the server (address, TLS files).
  Status Start();
  // Waits until both informers have synced, then marks the server ready. False on timeout.
  bool WaitForSync(std::chrono::milliseconds timeout);
  void Stop();

  int port() const { return server_.port(); }
  bool tls() const { return server_.tls(); }
  ClusterState& state() { return state_; }

 private:
  ClusterState state_;
  KubeBinder binder_;
  Metrics metrics_;
  Engine engine_;
  Extender extender_;
  Webhook webhook_;
  HttpServer server_;
  std::unique_ptr<kube::Informer> nodes_;
  std::unique_ptr<kube::Informer> pods_;
};

}  // namespace tessera::scheduler
