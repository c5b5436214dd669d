#include "http/guarded_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "http/certificate_names.h"
#include "http/connection_stream.h"
#include "log/log.h"
#include "log/log_limiter.h"

namespace tessera::http {
namespace {

using Clock = std::chrono::steady_clock;

// Set while the accept thread runs a connection that is over the limit: the connection is then
// refused instead of served.
thread_local bool t_over_limit = false;

// httplib's task queue, one thread per connection up to a limit. The count lives in a shared
// block so that a finishing thread never touches a queue that shutdown() has let go.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max) : max_(max), shared_(std::make_shared<Shared>()) {}

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      if (shared_->active >= max_) {
        t_over_limit = true;
      } else {
        ++shared_->active;
      }
    }
    if (t_over_limit) {
      fn();  // refuses quickly, without waiting on the client
      t_over_limit = false;
      return;
    }
    std::thread([shared = shared_, fn = std::move(fn)] {
      fn();
      std::lock_guard<std::mutex> lock(shared->mu);
      --shared->active;
      shared->idle.notify_all();
    }).detach();
  }

  void shutdown() override {
    std::unique_lock<std::mutex> lock(shared_->mu);
    shared_->idle.wait(lock, [this] { return shared_->active == 0; });
  }

 private:
  struct Shared {
    std::mutex mu;
    std::condition_variable idle;
    size_t active = 0;  // guarded by mu
  };
  const size_t max_;
  const std::shared_ptr<Shared> shared_;
};

log::LogLimiter refusal_log;

}  // namespace

GuardedServer::GuardedServer(ConnectionLimits limits, SSL_CTX* tls)
    : limits_(limits), tls_(tls), stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  new_task_queue = [max = limits_.max_connections] { return new ConnectionThreads(max); };
}

GuardedServer::~GuardedServer() {
  if (tls_) SSL_CTX_free(tls_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

int GuardedServer::Bind(const std::string& host, int port) {
  int listen_fd = -1;
  set_socket_options([&listen_fd](int fd) {
    httplib::default_socket_options(fd);
    listen_fd = fd;
  });
  int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound >= 0 && listen_fd >= 0) ::listen(listen_fd, SOMAXCONN);
  set_socket_options(httplib::default_socket_options);
  return bound;
}

void GuardedServer::Stop() {
  uint64_t one = 1;
  if (stop_fd_ >= 0 && ::write(stop_fd_, &one, sizeof one) < 0) {
    log::Warn("cannot signal the HTTP connections to stop", {{"error", strerror(errno)}});
  }
  stop();
}

void GuardedServer::Refuse(socket_t sock) {
  refused_.fetch_add(1);
  uint64_t dropped = 0;
  if (refusal_log.Allow(Clock::now(), &dropped)) {
    log::Warn("HTTP connection refused: too many open connections",
              {{"max-connections", std::to_string(limits_.max_connections)},
               {"suppressed", std::to_string(dropped)}});
  }
  if (!tls_) {
    static constexpr char kBusy[] =
        "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    (void)send(sock, kBusy, sizeof kBusy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  close(sock);
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  if (t_over_limit) {
    Refuse(sock);
    return false;
  }
  // kube-scheduler keeps its connections; without TCP_NODELAY every answer on a reused one
  // waits ~40 ms for the client's delayed ACK (httplib writes headers and body apart).
  int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ConnectionStream stream(sock, tls_ ? SSL_new(tls_) : nullptr, stop_fd_);
  bool ok = stream.Handshake(Clock::now() + limits_.request_timeout);
  while (ok && is_running() && stream.WaitForRequest(Clock::now() + limits_.idle_timeout)) {
    stream.StartRequest(Clock::now() + limits_.request_timeout, limits_.write_timeout);
    bool closed = false;
    ok = process_request(stream, /*close_connection=*/false, closed,
                         [&stream](httplib::Request& req) { req.ssl = stream.ssl(); });
    if (closed) break;
  }
  stream.Close();
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return ok;
}

Result<SSL_CTX*> LoadTlsContext(const std::string& cert_file, const std::string& key_file,
                                const std::string& client_ca) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return Internal("cannot create a TLS context");
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    SSL_CTX_free(ctx);
    return InvalidArgument("cannot load the TLS certificate " + cert_file + " and key " + key_file +
                           " (PEM files of a matching certificate and key expected)");
  }
  if (!client_ca.empty()) {
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(client_ca.c_str());
    if (!names || SSL_CTX_load_verify_locations(ctx, client_ca.c_str(), nullptr) != 1) {
      if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
      SSL_CTX_free(ctx);
      return InvalidArgument("cannot load the client CA bundle " + client_ca +
                             " (a PEM file of one or more CA certificates expected)");
    }
    SSL_CTX_set_client_CA_list(ctx, names);  // the context owns `names`
    // Not SSL_VERIFY_FAIL_IF_NO_PEER_CERT: health probes come without a certificate.
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  return ctx;
}

std::vector<std::string> VerifiedClientNames(const httplib::Request& req) {
  if (!req.ssl || SSL_get_verify_result(req.ssl) != X509_V_OK) return {};
  X509* cert = SSL_get1_peer_certificate(req.ssl);
  if (!cert) return {};
  CertificateNames names = NamesOf(cert);
  X509_free(cert);
  std::vector<std::string> out;
  if (!names.common_name.empty()) out.push_back(std::move(names.common_name));
  out.insert(out.end(), names.dns.begin(), names.dns.end());
  return out;
}

}  // namespace tessera::http
