// UiProxy: the local end of `kubectl tessera ui`. An HTTP server on a loopback address that
// passes the page's requests to one Tessera scheduler pod through the API server's pods/proxy
// subresource, with the user's Kubernetes credentials (a kube::Client): the API server checks
// who may reach the pod, as it does for kubectl port-forward.
//
// Only what the page uses goes through (AllowedUpstreamPath): GET and HEAD of /ui, /ui/... and
// /inspect, and POST /fit with a JSON body; "/" redirects to /ui/. Everything else is 404. A
// request whose Host is not the proxy's own address is 403 (a web page elsewhere cannot reach it
// through DNS rebinding), and so is a POST whose Origin is another site. The page's own token, if
// it sends one in Authorization, goes on as X-Tessera-Authorization (the API server keeps
// Authorization for itself); the user's Kubernetes credential never reaches the scheduler.
//
//   UiProxy proxy(client, {.address = "127.0.0.1", .port = 8420,
//                          .upstream =
//                          "/api/v1/namespaces/tessera-system/pods/https:s-1:8443/proxy"});
//   RETURN_IF_ERROR(proxy.Start());  // then http://127.0.0.1:<proxy.port()>/ui/
//
// Thread-safe: Start once, then port() and Stop() from any thread; requests run on httplib's
// thread pool and share the (thread-safe) client.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/status.h"
#include "kube/client.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace tessera::inspect {

struct UiProxyOptions {
  std::string address = "127.0.0.1";          // a loopback address (IsLoopbackAddress)
  int port = 0;                               // 0 = any free port
  std::string upstream;                       // the pod's proxy path, without a trailing '/'
  std::chrono::milliseconds timeout{30'000};  // per request passed on
};

// The scheduler path (with `query`, "" for none) a local request may reach, or nullopt.
std::optional<std::string> AllowedUpstreamPath(const std::string& method, const std::string& path,
                                               const std::string& query);

// 127.0.0.0/8, ::1 or "localhost".
bool IsLoopbackAddress(const std::string& address);

class UiProxy {
 public:
  UiProxy(kube::Client& client, UiProxyOptions options);
  ~UiProxy();  // Stop()
  UiProxy(const UiProxy&) = delete;
  UiProxy& operator=(const UiProxy&) = delete;

  // Binds and serves on a thread of its own. InvalidArgument for an address that is not a
  // loopback one; Unavailable naming the address when it cannot be bound (the port is taken, or
  // is privileged).
  Status Start();
  int port() const { return port_; }
  // Stops serving and joins the thread. Idempotent.
  void Stop();

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);
  bool HostAllowed(const std::string& host) const;

  kube::Client& client_;
  const UiProxyOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;  // set by Start, constant afterwards
};

}  // namespace tessera::inspect
