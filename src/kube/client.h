// Client: calls to the Kubernetes API server on JSON objects, for what Tessera needs.
//
// Every call waits for the client-side rate limiter (token bucket: qps, burst), sends the bearer
// token (or basic auth) when there is one and the Impersonate-* headers when the connection
// impersonates someone, and retries a bounded number of times when the server answers 429 (or
// a 5xx with Retry-After), waiting as Retry-After says (capped). Failures come back as a Status
// mapped by api_error.h (a failed resourceVersion precondition is kConflict, a missing object
// kNotFound, a network failure kUnavailable). Objects are nlohmann::json as the server sent them;
// objects.h reads them. Thread-safe: share one Client between threads.
//
//   ASSIGN_OR_RETURN(auto client, Client::Create(connection, {.qps = 50, .burst = 100}));
//   ASSIGN_OR_RETURN(Json pod, client->Get(kPods, "default", "p1"));
//   RETURN_IF_ERROR(client->PatchAnnotations(kPods, "default", "p1", {{"k", "v"}},
//                                            ResourceVersionOf(pod)).status());
//
// Retries, paging and errors in detail: docs/kube-client.md, "Calls and errors".
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/cancel_token.h"
#include "kube/connection.h"
#include "kube/http_transport.h"
#include "kube/objects.h"
#include "kube/rate_limiter.h"
#include "kube/resource.h"
#include "kube/token_source.h"
#include "kube/watch_event.h"

namespace tessera::kube {

struct ClientOptions {
  double qps = 50;  // <= 0: no client-side limit
  int burst = 100;
  // Per call, retries and their waits included (watches: see WatchOptions).
  std::chrono::milliseconds timeout{30'000};
  int max_retries = 5;                               // extra attempts after a 429
  std::chrono::milliseconds max_retry_wait{30'000};  // cap on one Retry-After wait
  std::string user_agent = "tessera";
};

struct ListOptions {
  std::string ns;              // "" = all namespaces (or a cluster-scoped resource)
  std::string label_selector;  // "app=x,tier!=db"
  std::string field_selector;  // "spec.nodeName=n1"
  int page_size = 500;         // limit per request; pages are gathered for the caller
};

struct ObjectList {
  std::vector<Json> items;
  std::string resource_version;  // the list's metadata.resourceVersion: watch from here
};

struct WatchOptions {
  std::string ns;
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // start after this version ("" = from now, with synthetic ADDs)
  bool allow_bookmarks = true;
  int timeout_seconds = 300;  // the server ends the watch after this; the client then resumes
};

// Per-call settings for the generic calls.
struct CallOptions {
  std::chrono::milliseconds timeout{0};  // 0 = ClientOptions::timeout; retries included
  CancelToken* cancel = nullptr;         // ends the call (and its retry waits) early: kUnavailable
};

// Called for every ADDED, MODIFIED, DELETED and BOOKMARK event; returns false to end the watch.
using WatchHandler = std::function<bool(const WatchEvent& event)>;

class Client {
 public:
  // InvalidArgument when the connection's credentials break kubectl's rules (CheckCredentials in
  // kube/connection_overrides.h: e.g. basic auth to an http:// server); an exec plugin's failure.
  static Result<std::unique_ptr<Client>> Create(const ConnectionConfig& connection,
                                                const ClientOptions& options = {});

  // --- Generic calls on any Resource -------------------------------------------------------
  Result<Json> Get(const Resource& resource, const std::string& ns, const std::string& name,
                   const CallOptions& call = {});
  // Gathers all pages (limit/continue) into one list.
  Result<ObjectList> List(const Resource& resource, const ListOptions& options,
                          const CallOptions& call = {});
  // Streams events until the server ends the watch (OK), `handler` returns false (OK), `cancel`
  // fires (OK), an ERROR event arrives (its Status; IsGone() for an expired version) or the
  // request fails (its Status; 410 likewise IsGone()).
  Status Watch(const Resource& resource, const WatchOptions& options, const WatchHandler& handler,
               CancelToken* cancel = nullptr);
  Result<Json> Create(const Resource& resource, const std::string& ns, const Json& object,
                      const CallOptions& call = {});
  // PUT: replaces the object; its metadata.resourceVersion is the precondition (409 kConflict).
  Result<Json> Update(const Resource& resource, const Json& object, const CallOptions& call = {});
  // PATCH with application/merge-patch+json, on the object or a subresource ("status").
  Result<Json> MergePatch(const Resource& resource, const std::string& ns, const std::string& name,
                          const Json& patch, const std::string& subresource = "",
                          const CallOptions& call = {});
  Status Delete(const Resource& resource, const std::string& ns, const std::string& name,
                const CallOptions& call = {});

  // --- What Tessera does ------------------------------------------------------------------
  // Merge-patches metadata.annotations / metadata.labels: a value sets, nullopt removes. With a
  // `resource_version`, kConflict when the object has changed since.
  Result<Json> PatchAnnotations(const Resource& resource, const std::string& ns,
                                const std::string& name, const StringMapChanges& changes,
                                const std::string& resource_version = "");
  Result<Json> PatchLabels(const Resource& resource, const std::string& ns, const std::string& name,
                           const StringMapChanges& changes,
                           const std::string& resource_version = "");
  // Merge-patches the status subresource with {"status": status}.
  Result<Json> PatchStatus(const Resource& resource, const std::string& ns, const std::string& name,
                           const Json& status, const std::string& resource_version = "");
  // Adds or replaces (by type) one condition of a pod's status: a strategic merge patch, which
  // keeps the other conditions.
  Result<Json> SetPodCondition(const std::string& ns, const std::string& name,
                               const Json& condition);
  // DELETEs a pod only while it has this UID (DeleteOptions.preconditions): a pod recreated
  // under the name is left alone (kConflict). Its own grace period applies.
  Status DeletePod(const std::string& ns, const std::string& name, const std::string& uid);
  // POSTs a Binding of the pod to `node`; `annotations` are merged into the pod in the same update.
  // `uid` (optional) makes the server refuse a pod that was recreated under the same name.
  Status Bind(const std::string& ns, const std::string& pod, const std::string& uid,
              const std::string& node, const std::map<std::string, std::string>& annotations,
              const CallOptions& call = {});
  // Creates a core/v1 Event about `involved` (any object with metadata); type "Normal"/"Warning".
  Result<Json> CreateEvent(const Json& involved, const std::string& type, const std::string& reason,
                           const std::string& message, const std::string& component);

  // The transport (connection statistics) and the limiter (for tests).
  HttpTransport& transport() { return *transport_; }
  const ClientOptions& options() const { return options_; }

  // One request with limits, auth and retries; returns the parsed JSON body of a 2xx answer.
  Result<Json> Request(const std::string& method, const std::string& path,
                       const Json* body = nullptr,
                       const std::string& content_type = "application/json",
                       const CallOptions& call = {});

  // One request as given (method, path, headers, body, timeout) with the same limits, auth,
  // impersonation and retries, for callers that pass the answer on (kubectl tessera ui through
  // the API server's proxy). Any HTTP status is an answer; errors only when none arrived. A 401
  // renews an exec plugin's token only when its body is the API server's own meta/v1 Status,
  // not a 401 of the pod behind the proxy.
  // Adds "Accept: application/json" unless the request has an Accept header.
  Result<HttpResponse> Send(HttpRequest request, CancelToken* cancel = nullptr);

 private:
  Client(std::unique_ptr<HttpTransport> transport, TokenSource token,
         const ConnectionConfig& connection, ClientOptions options);
  // Adds Accept, User-Agent, Impersonate-* and Authorization headers; *token gets the bearer
  // token sent ("" for none) when given.
  Status Prepare(HttpRequest& request, std::string* token = nullptr);
  // Replaces the request's Authorization header with the token source's current token (basic
  // auth when there is no token).
  Status Authorize(HttpRequest& request, std::string* token);
  // Sends a prepared request with retries; a 401 to an exec plugin's `token` fetches a new one
  // (into `token`) and tries once more. With `passed_on` (the answer may be another server's,
  // through the API server's proxy) only a 401 whose body is a meta/v1 Status does.
  Result<HttpResponse> Exchange(HttpRequest& request, std::string& token, CancelToken* cancel,
                                bool passed_on);
  // Runs `attempt` until it yields a response that is not a retryable 429/5xx or retries run out.
  Result<HttpResponse> WithRetries(HttpRequest& request,
                                   const std::function<Result<HttpResponse>()>& attempt,
                                   CancelToken* cancel);

  const ClientOptions options_;
  const std::unique_ptr<HttpTransport> transport_;
  TokenSource token_;  // thread-safe itself
  // Constant after construction: "Authorization: Basic ..." ("" without basic auth), and the
  // Impersonate-* header lines.
  const std::string basic_auth_;
  const std::vector<std::string> impersonation_;
  RateLimiter limiter_;
};

}  // namespace tessera::kube
