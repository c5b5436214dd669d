// HttpServer: the scheduler's HTTP(S) endpoints on one port.
//
//   POST /filter /prioritize /bind   kube-scheduler extender (extender.h)
//   POST /mutate /validate           admission webhook (webhook.h)
//   GET  /inspect                    state as JSON (inspect.h)
//   POST /fit                        "would it fit", a dry run (fit_dry_run.h), with ReadServices
//   GET  /healthz /readyz /metrics   liveness, readiness, Prometheus text
//   GET  /ui/...                     the web page (src/ui), only with ServerOptions::ui
//
// Handlers only translate. A malformed body (bad JSON, wrong shape, over the size limit) gets
// HTTP 400 with {"error": "..."}, is logged and counted, and changes nothing. Idle, slow and
// many connections are bounded by GuardedServer (http/guarded_server.h). TLS when a
// certificate and key are given. Start() binds (port 0 picks a free port, read back by port())
// and serves on a background thread; Stop() or the destructor ends it. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "http/guarded_server.h"
#include "log/log_limiter.h"
#include "scheduler/cluster_state.h"
#include "scheduler/dra_shares.h"
#include "scheduler/extender.h"
#include "scheduler/filter_memory.h"
#include "scheduler/fit_dry_run.h"
#include "scheduler/listen_address.h"
#include "scheduler/metrics.h"
#include "scheduler/quota_ledger.h"
#include "scheduler/read_access.h"
#include "scheduler/webhook.h"

namespace tessera::scheduler {

struct ServerOptions {
  std::string listen = "0.0.0.0:8443";  // host:port, [v6]:port
  std::string tls_cert;                 // PEM files; both set = HTTPS
  std::string tls_key;
  // Set: /filter, /prioritize and /bind serve only certificates that name one of
  // `extender_clients`, /mutate and /validate one of `webhook_clients` ("*" = any certificate
  // of the CA; an empty list = no certificate asked). Other endpoints serve everyone.
  std::string client_ca;
  std::vector<std::string> extender_clients;
  std::vector<std::string> webhook_clients;
  uint64_t max_body = 4 << 20;
  http::ConnectionLimits limits;
  // scheduler.ui.enabled: serve the web page under /ui/ (its own files only; it reads /inspect).
  bool ui = false;
};

// What /inspect and /fit show and who may read them, beside the state; each may be null.
struct ReadServices {
  const FilterMemory* filters = nullptr;  // the pending pods' last filters in /inspect
  const DraShareTable* dra = nullptr;     // the DRA shares in /inspect
  const FitDryRun* fit = nullptr;         // POST /fit; not served without
  ReadAuthorizer* authorizer = nullptr;   // null: /inspect and /fit are open to all
};

class HttpServer {
 public:
  // With `quotas`, /inspect and /metrics show the namespaces' GPU quotas and usage.
  HttpServer(ServerOptions options, Extender& extender, Webhook& webhook, const ClusterState& state,
             Metrics& metrics, const QuotaLedger* quotas = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. InvalidArgument for a bad listen address or TLS files,
  // Unavailable when the port cannot be bound.
  Status Start();
  void Stop();
  int port() const { return port_; }
  bool tls() const { return !options_.tls_cert.empty(); }

  // /readyz answers 200 once set (the state has been synced), 503 before.
  void SetReady(bool ready) { ready_.store(ready); }
  // /readyz answers 503 from now on, whatever SetReady says; everything else is still served.
  void SetDraining() { draining_.store(true); }
  // /healthz answers 503 with what `why_not_live` returns when that is not empty (a stuck leader,
  // scheduler_app.h), 200 otherwise. Call before Start().
  void SetLiveness(std::function<std::string()> why_not_live) {
    why_not_live_ = std::move(why_not_live);
  }
  // Call before Start().
  void SetReadServices(ReadServices services) { read_ = services; }

 private:
  void Routes();

  const ServerOptions options_;
  Extender& extender_;
  Webhook& webhook_;
  const ClusterState& state_;
  Metrics& metrics_;
  const QuotaLedger* const quotas_;  // may be null
  std::unique_ptr<http::GuardedServer> server_;
  std::thread thread_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::function<std::string()> why_not_live_;
  ReadServices read_;
  log::LogLimiter bad_request_log_;
  log::LogLimiter unauthorized_log_;
  int port_ = 0;
};

}  // namespace tessera::scheduler
