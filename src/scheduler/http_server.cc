#include "scheduler/http_server.h"

#include <httplib.h>

#include <sys/socket.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "common/strings.h"
#include "http/guarded_server.h"
#include "log/log.h"
#include "scheduler/compressed_json.h"
#include "scheduler/inspect.h"
#include "ui/ui_routes.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Clients of one group of endpoints: the names allowed and the key that sets them.
struct Clients {
  const std::vector<std::string>* allowed;
  const char* key;
};

// Why the client of `req` may not call an endpoint of `clients`; empty when it may.
std::string Refusal(const httplib::Request& req, const Clients& clients) {
  std::vector<std::string> names = http::VerifiedClientNames(req);
  for (const std::string& a : *clients.allowed) {
    if (a == "*" ? !names.empty() : std::find(names.begin(), names.end(), a) != names.end()) {
      return "";
    }
  }
  return req.path + " serves only clients with a certificate signed by scheduler.tls.client-ca " +
         "that names " + Join(*clients.allowed, " or ") + " (" + clients.key +
         "); this client presented " +
         (names.empty() ? std::string("none") : "one for " + Join(names, ", "));
}

}  // namespace

HttpServer::HttpServer(ServerOptions options, Extender& extender, Webhook& webhook,
                       const ClusterState& state, Metrics& metrics, const QuotaLedger* quotas)
    : options_(std::move(options)),
      extender_(extender),
      webhook_(webhook),
      state_(state),
      metrics_(metrics),
      quotas_(quotas) {}

HttpServer::~HttpServer() {
  Stop();
}

void HttpServer::Routes() {
  httplib::Server& s = *server_;
  auto bad = [this](const httplib::Request& req, httplib::Response& res, const std::string& why) {
    metrics_.CountBadRequest();
    uint64_t dropped = 0;
    if (bad_request_log_.Allow(log::LogLimiter::Clock::now(), &dropped)) {
      log::Warn("bad request", {{"path", req.path},
                                {"client", req.remote_addr},
                                {"error", why},
                                {"suppressed", std::to_string(dropped)}});
    }
    res.status = 400;
    res.set_content(Dump(json{{"error", why}}), "application/json");
  };
  auto unauthorized = [this](const httplib::Request& req, httplib::Response& res,
                             const std::string& why) {
    metrics_.CountUnauthorized();
    uint64_t dropped = 0;
    if (unauthorized_log_.Allow(log::LogLimiter::Clock::now(), &dropped)) {
      log::Warn("request refused: client not authorized",
                {{"path", req.path},
                 {"client", req.remote_addr},
                 {"error", why},
                 {"suppressed", std::to_string(dropped)}});
    }
    res.status = 403;
    res.set_content(Dump(json{{"error", why}}), "application/json");
  };
  const bool authenticate = !options_.client_ca.empty();
  const Clients extender{&options_.extender_clients, "scheduler.tls.extender-clients"};
  const Clients webhook{&options_.webhook_clients, "scheduler.tls.webhook-clients"};
  // `fn` answers with the response body's JSON text.
  auto post = [&s, bad, unauthorized, authenticate](
                  const char* path, Clients clients,
                  std::function<Result<std::string>(const json&)> fn) {
    bool check = authenticate && !clients.allowed->empty();
    s.Post(path, [fn, bad, unauthorized, check, clients](const httplib::Request& req,
                                                         httplib::Response& res) {
      if (check) {
        std::string why = Refusal(req, clients);
        if (!why.empty()) return unauthorized(req, res, why);
      }
      json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      if (body.is_discarded()) return bad(req, res, "the request body is not valid JSON");
      try {
        Result<std::string> out = fn(body);
        if (!out.ok()) return bad(req, res, out.status().message());
        res.set_content(*out, "application/json");
      } catch (const std::exception& e) {
        // A shape the translators did not foresee: still a bad request, never a crash.
        bad(req, res, std::string("malformed request: ") + e.what());
      }
    });
  };
  post("/filter", extender, [this](const json& b) { return extender_.Filter(b); });
  post("/prioritize", extender, [this](const json& b) { return extender_.Prioritize(b); });
  post("/bind", extender, [this](const json& b) { return extender_.Bind(b); });
  post("/preempt", extender, [this](const json& b) { return extender_.Preempt(b); });
  auto dumped = [](Result<json> r) -> Result<std::string> {
    if (!r.ok()) return r.status();
    return Dump(*r);
  };
  post("/mutate", webhook, [this, dumped](const json& b) { return dumped(webhook_.Mutate(b)); });
  post("/validate", webhook,
       [this, dumped](const json& b) { return dumped(webhook_.Validate(b)); });
  // /inspect and /fit: open, or to a token allowed by the API server (read_access.h).
  auto allowed = [this](const httplib::Request& req, httplib::Response& res,
                        const ReadAction& action) {
    if (!read_.authorizer) return true;
    // Through the API server's pods/proxy (kubectl tessera ui) Authorization is the caller's
    // credential for the API server, which removes it: the page sends its token in both.
    std::string authorization = req.get_header_value("Authorization");
    if (authorization.empty()) authorization = req.get_header_value(kPageAuthorizationHeader);
    AccessVerdict v = read_.authorizer->Check(authorization, action);
    if (v.status == 200) return true;
    if (v.status == 401) res.set_header("WWW-Authenticate", "Bearer realm=\"tessera-scheduler\"");
    if (v.status == 401 || v.status == 403) metrics_.CountUnauthorized();
    if (v.status == 429) res.set_header("Retry-After", "1");
    uint64_t dropped = 0;
    if (unauthorized_log_.Allow(log::LogLimiter::Clock::now(), &dropped)) {
      log::Warn("request refused: no access to the scheduler's state",
                {{"path", req.path},
                 {"client", req.remote_addr},
                 {"status", std::to_string(v.status)},
                 {"error", v.error},
                 {"suppressed", std::to_string(dropped)}});
    }
    res.status = v.status;
    res.set_content(Dump(json{{"error", v.error}}), "application/json");
    return false;
  };
  s.Get("/inspect", [this, allowed](const httplib::Request& req, httplib::Response& res) {
    if (!allowed(req, res, kReadInspect)) return;
    InspectExtras extras;
    if (read_.filters) extras.filters = read_.filters->All();
    if (read_.dra) extras.dra = read_.dra->Snapshot();
    SetCompressedJson(
        req, res,
        Dump(InspectJson(state_.Snapshot(),
                         quotas_ ? quotas_->Quotas() : std::vector<NamespaceQuotas>{}, extras)));
  });
  if (read_.fit) {
    s.Post("/fit", [this, allowed, bad](const httplib::Request& req, httplib::Response& res) {
      if (!allowed(req, res, kRunFit)) return;
      json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      if (body.is_discarded()) return bad(req, res, "the request body is not valid JSON");
      try {
        Result<json> answer = read_.fit->Answer(body);
        if (!answer.ok()) return bad(req, res, answer.status().message());
        res.set_content(Dump(*answer), "application/json");
      } catch (const std::exception& e) {
        // A shape the dry run did not foresee: a bad request, never a crash.
        bad(req, res, std::string("malformed request: ") + e.what());
      }
    });
  }
  // The page's own files hold no data: served to all; it reads /inspect with the user's token
  // (docs/ui.md).
  if (options_.ui) ui::AddUiRoutes(s);
  s.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    std::string why = why_not_live_ ? why_not_live_() : std::string();
    res.status = why.empty() ? 200 : 503;
    res.set_content(why.empty() ? "ok\n" : why + "\n", "text/plain");
  });
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (draining_.load()) {
      res.status = 503;
      res.set_content("shutting down\n", "text/plain");
      return;
    }
    bool ready = ready_.load();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ok\n" : "state not synced yet\n", "text/plain");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.Render(state_.Snapshot(),
                                    quotas_ ? quotas_->Quotas() : std::vector<NamespaceQuotas>{}),
                    "text/plain; version=0.0.4");
  });
  s.set_error_handler([this, bad](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 413) {
      return bad(req, res,
                 "the request body is larger than the limit of " +
                     std::to_string(options_.max_body) + " bytes");
    }
    if (res.status == 404) {
      res.set_content(Dump(json{{"error", "no such endpoint: " + req.method + " " + req.path}}),
                      "application/json");
    }
  });
}

Status HttpServer::Start() {
  ASSIGN_OR_RETURN(auto address, ParseListen(options_.listen));
  if (options_.tls_cert.empty() != options_.tls_key.empty()) {
    return InvalidArgument("scheduler.tls.cert and scheduler.tls.key must be set together");
  }
  SSL_CTX* tls_context = nullptr;
  if (!options_.client_ca.empty() && !tls()) {
    return InvalidArgument(
        "scheduler.tls.client-ca needs scheduler.tls.cert and scheduler.tls.key");
  }
  if (tls()) {
    for (const std::string& f : {options_.tls_cert, options_.tls_key, options_.client_ca}) {
      if (f.empty()) continue;
      std::error_code ec;
      if (!std::filesystem::is_regular_file(f, ec)) {
        return InvalidArgument("TLS file " + f + " does not exist or is not a file");
      }
    }
    ASSIGN_OR_RETURN(tls_context,
                     http::LoadTlsContext(options_.tls_cert, options_.tls_key, options_.client_ca));
  }
  server_ = std::make_unique<http::GuardedServer>(options_.limits, tls_context);
  server_->set_payload_max_length(options_.max_body);
  Routes();
  auto [host, port] = address;
  port_ = server_->Bind(host, port);
  if (port_ < 0) {
    return Unavailable(port == 0
                           ? "cannot bind " + host + " on any port"
                           : "cannot listen on " + options_.listen + " (in use, or not allowed)");
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (server_) server_->Stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tessera::scheduler
