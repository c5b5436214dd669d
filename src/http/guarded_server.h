// GuardedServer: an httplib::Server that idle, slow and many connections cannot stall. Each
// connection runs on its own thread, up to `max_connections` at once (one more is answered 503,
// or closed at once over TLS, and counted); the TLS handshake, and each request's headers and body,
// get `request_timeout` in all, each answer `write_timeout` in all; a kept-alive connection that
// sends no new request within `idle_timeout` is closed; Stop() ends every wait at once. Handlers
// run on the connection threads, so a slow handler holds only its own connection. Routes are
// added with httplib's API before listening. Thread-safe as httplib::Server is.
//
//   GuardedServer server({.max_connections = 1024}, /*tls=*/nullptr);
//   server.Get("/healthz", [](const httplib::Request&, httplib::Response& r) { r.status = 200; });
//   int port = server.Bind("0.0.0.0", 0);  // then listen_after_bind() on a thread
//
// Why: docs/scheduler.md, "HTTP endpoints".
#pragma once

#include <openssl/ssl.h>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace tessera::http {

struct ConnectionLimits {
  std::chrono::milliseconds request_timeout{10'000};  // TLS handshake; headers + body
  std::chrono::milliseconds write_timeout{10'000};    // one answer
  std::chrono::milliseconds idle_timeout{30'000};     // wait for the next request
  size_t max_connections = 1024;
};

class GuardedServer : public httplib::Server {
 public:
  // `tls` null = plain HTTP; otherwise the server owns it.
  GuardedServer(ConnectionLimits limits, SSL_CTX* tls);
  ~GuardedServer() override;
  GuardedServer(const GuardedServer&) = delete;
  GuardedServer& operator=(const GuardedServer&) = delete;

  // Binds `host`:`port` (0: any free port) with a listen backlog of SOMAXCONN (cpp-httplib 0.11
  // listens with 5: a burst of connections, kube-scheduler's parallel binds or many scrapers,
  // would overflow it and wait for SYN retries). The port bound, or -1.
  int Bind(const std::string& host, int port);
  // Ends every connection's wait, then stops listening (httplib's stop()).
  void Stop();
  // Connections refused because `max_connections` were open.
  uint64_t refused() const { return refused_.load(); }

 private:
  bool process_and_close_socket(socket_t sock) override;
  void Refuse(socket_t sock);

  const ConnectionLimits limits_;
  SSL_CTX* const tls_;
  const int stop_fd_;
  std::atomic<uint64_t> refused_{0};
};

// Loads a PEM certificate chain and key into a TLS server context (TLS 1.2 or later).
// With `client_ca`, the server asks every client for a certificate and verifies one that is
// presented against that CA bundle (a client that presents a bad one fails the handshake); a
// client without one is still served, so that probes reach health endpoints: handlers decide
// with VerifiedClientNames. InvalidArgument naming the files when they cannot be loaded or do
// not match.
Result<SSL_CTX*> LoadTlsContext(const std::string& cert_file, const std::string& key_file,
                                const std::string& client_ca = "");

// The names the client's certificate proves: its subject's common name, then its DNS
// subjectAltNames. Empty when the request came without TLS, without a client certificate, or
// with one the CA did not sign for client authentication.
std::vector<std::string> VerifiedClientNames(const httplib::Request& req);

}  // namespace tessera::http
