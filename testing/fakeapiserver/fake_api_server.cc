#include "fakeapiserver/fake_api_server.h"

#include <csignal>
#include <fstream>

#include <sys/socket.h>

#include <httplib.h>

#include "fakeapiserver/api_handler.h"
#include "fakeapiserver/discovery.h"
#include "fakeapiserver/fault_injector.h"
#include "fakeapiserver/object_store.h"
#include "fakeapiserver/pod_proxy.h"

namespace tessera::testing {

using nlohmann::json;

namespace {

constexpr size_t kServerThreads = 128;  // each open watch or keep-alive connection holds one

bool Readable(const std::string& path) {
  return std::ifstream(path).good();
}

Result<int> ParseInt(const httplib::Request& req, const char* name, int fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string text = req.get_param_value(name);
  try {
    size_t used = 0;
    int v = std::stoi(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  return InvalidArgument(std::string("query parameter ") + name + "=\"" + text +
                         "\" must be a whole number >= 0");
}

}  // namespace

Result<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(const Options& options) {
  std::string_view listen = options.listen;
  size_t colon = listen.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return InvalidArgument("listen address \"" + options.listen +
                           "\" must be HOST:PORT, e.g. 127.0.0.1:0");
  }
  std::string host(listen.substr(0, colon));
  int port = -1;
  try {
    size_t used = 0;
    std::string port_text(listen.substr(colon + 1));
    port = std::stoi(port_text, &used);
    if (used != port_text.size()) port = -1;
  } catch (const std::exception&) {
  }
  if (port < 0 || port > 65535) {
    return InvalidArgument("listen address \"" + options.listen +
                           "\" has no valid port (0-65535; 0 picks a free one)");
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return InvalidArgument("HTTPS needs both a certificate and a key (got only one of them)");
  }
  if (!options.client_ca.empty() && options.tls_cert.empty()) {
    return InvalidArgument("a client CA needs HTTPS: give a certificate and a key too");
  }
  for (const std::string& file : {options.tls_cert, options.tls_key, options.client_ca}) {
    if (!file.empty() && !Readable(file)) {
      return Unavailable("cannot read TLS file \"" + file + "\"");
    }
  }
  std::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<FakeApiServer> s(new FakeApiServer());
  s->options_ = options;
  s->host_ = host;
  s->tls_ = !options.tls_cert.empty();
  s->store_ = std::make_unique<ObjectStore>(options.history);
  s->faults_ = std::make_unique<FaultInjector>();
  s->handler_ = std::make_unique<ApiHandler>(
      *s->store_, options.bookmark_interval,
      options.admission_webhook.empty()
          ? nullptr
          : std::make_unique<AdmissionWebhook>(options.admission_webhook, "tessera.io"));
  if (s->tls_) {
    s->server_ = std::make_unique<httplib::SSLServer>(
        options.tls_cert.c_str(), options.tls_key.c_str(),
        options.client_ca.empty() ? nullptr : options.client_ca.c_str());
  } else {
    s->server_ = std::make_unique<httplib::Server>();
  }
  if (!s->server_->is_valid()) {
    return Unavailable("cannot load the TLS certificate \"" + options.tls_cert + "\", key \"" +
                       options.tls_key + "\" or client CA \"" + options.client_ca + "\"");
  }
  s->server_->new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  s->server_->set_keep_alive_timeout(options.keep_alive_seconds);
  // Answers on reused connections would otherwise wait ~40 ms each (Nagle against the client's
  // delayed ACK, since httplib writes headers and body apart).
  s->server_->set_tcp_nodelay(true);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which lets two servers share a port.
  s->server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s->Route();
  if (port == 0) {
    s->port_ = s->server_->bind_to_any_port(host);
    if (s->port_ <= 0) return Unavailable("cannot bind any port on \"" + host + "\"");
  } else {
    if (!s->server_->bind_to_port(host, port)) {
      return Unavailable("cannot bind " + options.listen + " (in use, or not a local address)");
    }
    s->port_ = port;
  }
  s->thread_ = std::thread([srv = s->server_.get()] { srv->listen_after_bind(); });
  // httplib's stop() does nothing before the accept loop runs: wait for it, so that a Stop()
  // right after Start() cannot leave the loop blocked in accept().
  for (int i = 0; i < 5000 && !s->server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!s->server_->is_running()) return Internal("the HTTP server did not start within 5 s");
  return s;
}

FakeApiServer::~FakeApiServer() {
  Stop();
}

std::string FakeApiServer::url() const {
  std::string host = host_ == "0.0.0.0" || host_.empty() ? "127.0.0.1" : host_;
  return std::string(tls_ ? "https://" : "http://") + host + ":" + std::to_string(port_);
}

void FakeApiServer::Stop() {
  std::lock_guard lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  store_->Stop();
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

void FakeApiServer::CloseWatches() {
  store_->CloseWatches();
}
void FakeApiServer::ExpireHistory() {
  store_->ExpireHistory();
}
void FakeApiServer::FailNext(int count, int status, int retry_after_seconds) {
  faults_->FailNext(count, status, retry_after_seconds);
}
void FakeApiServer::SetLatency(std::chrono::milliseconds latency) {
  faults_->SetLatency(latency);
}
void FakeApiServer::SetTooOldAsEvent(bool as_event) {
  handler_->SetTooOldAsEvent(as_event);
}

void FakeApiServer::Route() {
  httplib::Server& srv = *server_;
  // Control endpoints: never subject to injected faults.
  auto control = [this](const std::string& name, auto action) {
    server_->Post("/fake/" + name, [action](const httplib::Request& req, httplib::Response& res) {
      Status status = action(req);
      if (!status.ok()) return SendError(res, BadRequest(status.message()));
      SendJson(res, 200, {{"ok", true}});
    });
  };
  control("close-watches", [this](const httplib::Request&) {
    CloseWatches();
    return Status::Ok();
  });
  control("expire-history", [this](const httplib::Request&) {
    ExpireHistory();
    return Status::Ok();
  });
  control("fail", [this](const httplib::Request& req) -> Status {
    ASSIGN_OR_RETURN(int count, ParseInt(req, "count", 1));
    ASSIGN_OR_RETURN(int status, ParseInt(req, "status", 500));
    ASSIGN_OR_RETURN(int retry_after, ParseInt(req, "retryAfter", status == 429 ? 1 : 0));
    if (status < 400 || status > 599) {
      return InvalidArgument("status=" + std::to_string(status) + " must be 400-599");
    }
    FailNext(count, status, retry_after);
    return Status::Ok();
  });
  control("latency", [this](const httplib::Request& req) -> Status {
    ASSIGN_OR_RETURN(int ms, ParseInt(req, "ms", 0));
    SetLatency(std::chrono::milliseconds(ms));
    return Status::Ok();
  });
  control("too-old-as-event", [this](const httplib::Request& req) -> Status {
    std::string on = req.get_param_value("on");
    if (on != "true" && on != "false") return InvalidArgument("on= must be true or false");
    SetTooOldAsEvent(on == "true");
    return Status::Ok();
  });

  // Everything else is the API. Faults apply here, once the request body has been read.
  auto api = [this](const httplib::Request& req, httplib::Response& res) {
    if (std::optional<FaultInjector::Failure> failure = faults_->Intercept()) {
      if (failure->retry_after_seconds > 0) {
        res.set_header("Retry-After", std::to_string(failure->retry_after_seconds));
      }
      return SendError(res, failure->error);
    }
    if (req.path == "/version") return SendJson(res, 200, VersionInfo());
    if (req.path == "/healthz" || req.path == "/readyz" || req.path == "/livez") {
      return res.set_content("ok", "text/plain");
    }
    if (IsPodProxyPath(req.path)) return ServePodProxy(*store_, req, res);
    if (access_reviews_.Handle(req, res)) return;
    handler_->Handle(req, res);
  };
  const std::string any = ".*";
  srv.Get(any, api);
  srv.Post(any, api);
  srv.Put(any, api);
  srv.Patch(any, api);
  srv.Delete(any, api);
}

}  // namespace tessera::testing
