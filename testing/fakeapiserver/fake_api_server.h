// FakeApiServer: an in-memory Kubernetes API server for tests, over HTTP or HTTPS.
//
// It serves namespaces, pods, nodes, events (v1), leases (coordination.k8s.io/v1) and resource
// claims (resource.k8s.io/v1) with the real server's semantics where Tessera depends on them: one
// global resourceVersion, optimistic concurrency, merge/strategic-merge/JSON patches, field and
// label selectors, pagination, pods/binding, watches with replay, bookmarks and 410 after a bounded
// history, and discovery and Table answers enough for the real kubectl. Faults are injected
// through methods here or the /fake/... control endpoints (docs/fake-api-server.md).
//
//   auto server = FakeApiServer::Start({});            // http://127.0.0.1:<free port>
//   if (!server.ok()) FAIL() << server.status().ToString();
//   Client c((*server)->url()); ...
//   (*server)->FailNext(2, 429, 1);                    // the next two requests: 429, Retry-After 1
//
// Starting a server makes the process ignore SIGPIPE (a watch client that goes away must not
// kill the test). Thread-safe: every method may be called from any thread while requests run.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "fakeapiserver/access_reviews.h"

namespace httplib {
class Server;
}

namespace tessera::testing {

class ApiHandler;
class FaultInjector;
class ObjectStore;

class FakeApiServer {
 public:
  struct Options {
    std::string listen = "127.0.0.1:0";  // port 0 = pick a free port
    std::string tls_cert, tls_key;       // HTTPS when both set (PEM files)
    std::string client_ca;               // when set, require a client certificate signed by it
    size_t history = 1000;               // watch events kept; older resourceVersions get 410
    std::chrono::milliseconds bookmark_interval{1000};  // BOOKMARK events, when asked for
    // Idle keep-alive connections close after this; Stop() waits up to this long for them.
    int keep_alive_seconds = 1;
    // When set ("http://host:port"), every pod created goes through the admission webhook there:
    // <url>/mutate, then <url>/validate (AdmissionReview v1; see admission_webhook.h).
    std::string admission_webhook;
  };

  // Binds and starts serving on a background thread. Errors: InvalidArgument for a malformed
  // listen address or half a TLS pair, Unavailable when the address cannot be bound or the
  // certificate files cannot be loaded.
  static Result<std::unique_ptr<FakeApiServer>> Start(const Options& options);

  ~FakeApiServer();  // Stop()
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:PORT" or "https://127.0.0.1:PORT"

  // Ends open watches, stops accepting and waits for the serving threads. Idempotent.
  void Stop();

  // Fault injection (also POST /fake/...): end every open watch now; make every resourceVersion
  // before now too old for watches (410); fail the next `count` API requests with `status`
  // (`retry_after_seconds` > 0 adds Retry-After); add `latency` to every API request.
  void CloseWatches();
  void ExpireHistory();
  void FailNext(int count, int status, int retry_after_seconds = 0);
  void SetLatency(std::chrono::milliseconds latency);
  // When set, a watch from a too-old resourceVersion gets an in-stream ERROR event (HTTP 200)
  // instead of an HTTP 410 answer.
  void SetTooOldAsEvent(bool as_event);

  // The tokens TokenReview authenticates and the grants SubjectAccessReview allows.
  AccessReviews& access_reviews() { return access_reviews_; }

 private:
  FakeApiServer() = default;
  void Route();

  // Constant after Start.
  Options options_;
  std::string host_;
  int port_ = 0;
  bool tls_ = false;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<FaultInjector> faults_;
  std::unique_ptr<ApiHandler> handler_;
  std::unique_ptr<httplib::Server> server_;
  AccessReviews access_reviews_;
  std::thread thread_;

  std::mutex stop_mu_;
  bool stopped_ = false;  // guarded by stop_mu_
};

}  // namespace tessera::testing
