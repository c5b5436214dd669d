#include "node/metrics/metrics_server.h"

#include "http/guarded_server.h"

namespace tessera::node {

MetricsServer::MetricsServer(std::function<std::string()> render,
                             std::function<std::string()> not_ready)
    : render_(std::move(render)), not_ready_(std::move(not_ready)) {}

MetricsServer::~MetricsServer() {
  Stop();
}

Status MetricsServer::Start(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgument("metrics address \"" + listen + "\": expected HOST:PORT or :PORT");
  }
  std::string host = listen.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  int port = 0;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (...) {
    return InvalidArgument("metrics address \"" + listen + "\": the port is not a number");
  }
  // Each connection on a thread of its own, with deadlines: an idle or slow client cannot hold
  // off Prometheus or the liveness probe (cpp-httplib's own pool has 8 threads).
  server_ = std::make_unique<http::GuardedServer>(http::ConnectionLimits{}, nullptr);
  // Prometheus keeps its connection: without TCP_NODELAY each scrape's body would wait ~40 ms for
  // the delayed ACK of its headers (httplib writes them apart).
  server_->set_tcp_nodelay(true);
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_(), "text/plain; version=0.0.4");
  });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    std::string why = not_ready_ ? not_ready_() : "";
    if (why.empty()) {
      res.set_content("ok\n", "text/plain");
      return;
    }
    res.status = 503;
    res.set_content("not ready: " + why + "\n", "text/plain");
  });
  port_ = server_->Bind(host, port);
  if (port_ < 0) {
    server_.reset();
    return Unavailable("cannot listen on " + listen + " for metrics");
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void MetricsServer::Stop() {
  if (server_) server_->Stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace tessera::node
