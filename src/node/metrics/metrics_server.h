// MetricsServer: serves GET /metrics (Prometheus text from a render function), GET /healthz (the
// liveness probe: the agent's process serves) and GET /readyz (the readiness probe: 200 when
// `not_ready` gives an empty reason, else 503 with the reason) on HOST:PORT (":9394" = every
// address; port 0 picks a free port, see port()).
//
// Each connection has a thread of its own and deadlines (http::GuardedServer): idle, slow and many
// clients cannot stall the scrapes or the probes. Start/Stop from one thread; requests are served
// on the connections' threads, so `render` and `not_ready` must be thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace tessera::http {
class GuardedServer;
}

namespace tessera::node {

class MetricsServer {
 public:
  explicit MetricsServer(std::function<std::string()> render,
                         std::function<std::string()> not_ready = {});
  ~MetricsServer();

  // Binds `listen` ("HOST:PORT" or ":PORT") and serves in the background.
  Status Start(const std::string& listen);
  void Stop();
  int port() const { return port_; }

 private:
  std::function<std::string()> render_;
  std::function<std::string()> not_ready_;
  std::unique_ptr<http::GuardedServer> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tessera::node
