#include "kube/client.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "common/strings.h"
#include "kube/api_error.h"
#include "kube/connection_overrides.h"
#include "log/log.h"

namespace tessera::kube {

namespace {

constexpr const char* kMergePatch = "application/merge-patch+json";
constexpr const char* kStrategicMergePatch = "application/strategic-merge-patch+json";

// Sleeps `wait`, waking early (false) when `cancel` fires.
bool SleepUnlessCancelled(std::chrono::milliseconds wait, CancelToken* cancel) {
  auto until = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < until) {
    if (cancel != nullptr && cancel->cancelled()) return false;
    auto left = until - std::chrono::steady_clock::now();
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(50)));
  }
  return cancel == nullptr || !cancel->cancelled();
}

bool Retryable(const HttpResponse& response) {
  if (response.status == 429) return true;
  return response.status >= 500 && response.retry_after_seconds.has_value();
}

// Whether `response` is the API server's own error answer, a meta/v1 Status; through pods/proxy
// (Client::Send) an answer without one comes from the pod.
bool IsApiServerStatus(const HttpResponse& response) {
  Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  return body.is_object() && body.value("kind", "") == "Status";
}

Result<Json> ParseBody(const HttpResponse& response, const std::string& context) {
  if (response.status < 200 || response.status >= 300) {
    return ApiErrorFromResponse(response.status, response.body).ToStatus(context);
  }
  Json parsed = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return Unavailable(context +
                       ": the server's answer is not JSON: " + response.body.substr(0, 120));
  }
  return parsed;
}

// A user-extra key as client-go puts it in a header name: bytes that are not token characters
// (RFC 7230), and '%', as %XX.
std::string HeaderKeyEscape(std::string_view key) {
  return PercentEncode(key, "!#$&'*+-.^_`|~");
}

std::vector<std::string> ImpersonationHeaders(const Impersonation& as) {
  std::vector<std::string> headers;
  if (as.user.empty()) return headers;  // CheckCredentials refuses the rest without a user
  headers.push_back("Impersonate-User: " + as.user);
  if (!as.uid.empty()) headers.push_back("Impersonate-Uid: " + as.uid);
  for (const std::string& group : as.groups) headers.push_back("Impersonate-Group: " + group);
  for (const auto& [key, values] : as.extra) {
    for (const std::string& value : values) {
      headers.push_back("Impersonate-Extra-" + HeaderKeyEscape(key) + ": " + value);
    }
  }
  return headers;
}

std::string BasicAuth(const ConnectionConfig& connection) {
  if (connection.username.empty()) return "";
  return "Authorization: Basic " + Base64Encode(connection.username + ":" + connection.password);
}

std::vector<std::pair<std::string, std::string>> SelectorParams(const std::string& labels,
                                                                const std::string& fields) {
  return {{"labelSelector", labels}, {"fieldSelector", fields}};
}

}  // namespace

Client::Client(std::unique_ptr<HttpTransport> transport, TokenSource token,
               const ConnectionConfig& connection, ClientOptions options)
    : options_(std::move(options)),
      transport_(std::move(transport)),
      token_(std::move(token)),
      basic_auth_(BasicAuth(connection)),
      impersonation_(ImpersonationHeaders(connection.impersonate)),
      limiter_(options_.qps, options_.burst) {}

Result<std::unique_ptr<Client>> Client::Create(const ConnectionConfig& connection,
                                               const ClientOptions& options) {
  RETURN_IF_ERROR(CheckCredentials(connection));
  if (connection.exec) {
    // The plugin runs now: a certificate it returns is part of the TLS setup (and kept for the
    // Client's life); its token is asked for again once it expires.
    auto exec = std::make_shared<ExecCredentialSource>(*connection.exec);
    Result<ExecCredential> first = exec->Current();
    if (!first.ok()) return first.status().WithContext(connection.origin);
    ConnectionConfig with_cert = connection;
    if (!first->client_cert_pem.empty()) {
      with_cert.client_cert_pem = first->client_cert_pem;
      with_cert.client_key_pem = first->client_key_pem;
      with_cert.client_cert_file.clear();
      with_cert.client_key_file.clear();
    }
    ASSIGN_OR_RETURN(std::unique_ptr<HttpTransport> transport, HttpTransport::Create(with_cert));
    return std::unique_ptr<Client>(new Client(
        std::move(transport), TokenSource::FromExec(std::move(exec)), connection, options));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<HttpTransport> transport, HttpTransport::Create(connection));
  // A token wins over basic auth's header; the oidc id-token is used only without either.
  TokenSource token = !connection.token_file.empty() ? TokenSource::FromFile(connection.token_file)
                      : !connection.token.empty()    ? TokenSource::Fixed(connection.token)
                      : connection.oidc && connection.username.empty()
                          ? TokenSource::FromOidc(*connection.oidc)
                          : TokenSource();
  if (!connection.token_file.empty()) {
    Result<std::string> first = token.Token();
    if (!first.ok()) return first.status().WithContext(connection.origin);
  }
  // An expired id-token fails here, with what to do, rather than as the first request's error.
  if (connection.oidc) RETURN_IF_ERROR(token.Token().status());
  return std::unique_ptr<Client>(
      new Client(std::move(transport), std::move(token), connection, options));
}

Status Client::Prepare(HttpRequest& request, std::string* sent) {
  request.headers.push_back("Accept: application/json");
  request.headers.push_back("User-Agent: " + options_.user_agent);
  request.headers.insert(request.headers.end(), impersonation_.begin(), impersonation_.end());
  return Authorize(request, sent);
}

Status Client::Authorize(HttpRequest& request, std::string* sent) {
  std::erase_if(request.headers,
                [](const std::string& h) { return h.rfind("Authorization: ", 0) == 0; });
  ASSIGN_OR_RETURN(std::string token, token_.Token());
  if (!token.empty()) {
    request.headers.push_back("Authorization: Bearer " + token);
  } else if (!basic_auth_.empty()) {
    request.headers.push_back(basic_auth_);
  }
  if (sent != nullptr) *sent = token;
  return Status::Ok();
}

Result<HttpResponse> Client::WithRetries(HttpRequest& request,
                                         const std::function<Result<HttpResponse>()>& attempt,
                                         CancelToken* cancel) {
  // The request's timeout bounds all attempts and waits together.
  using Clock = std::chrono::steady_clock;
  const bool bounded = request.timeout.count() > 0;
  const Clock::time_point deadline = Clock::now() + request.timeout;
  for (int tries = 0;; ++tries) {
    limiter_.Wait();
    if (bounded) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      request.timeout = std::max(left, std::chrono::milliseconds(1));
    }
    Result<HttpResponse> response = attempt();
    if (!response.ok() || !Retryable(*response) || tries >= options_.max_retries ||
        response->cancelled) {
      return response;
    }
    std::chrono::milliseconds wait =
        std::chrono::seconds(response->retry_after_seconds.value_or(1));
    wait = std::clamp(wait, std::chrono::milliseconds(0), options_.max_retry_wait);
    if (bounded && Clock::now() + wait >= deadline) return response;  // no time left to retry
    log::Debug("API server asked to retry", {{"request", request.method + " " + request.path},
                                             {"status", std::to_string(response->status)},
                                             {"wait_ms", std::to_string(wait.count())}});
    if (!SleepUnlessCancelled(wait, cancel)) return response;
  }
}

Result<Json> Client::Request(const std::string& method, const std::string& path, const Json* body,
                             const std::string& content_type, const CallOptions& call) {
  CancelToken* cancel = call.cancel;
  HttpRequest request{.method = method,
                      .path = path,
                      .timeout = call.timeout.count() > 0 ? call.timeout : options_.timeout};
  if (body != nullptr) {
    request.body = body->dump();
    request.headers.push_back("Content-Type: " + content_type);
  }
  std::string token;
  RETURN_IF_ERROR(Prepare(request, &token));
  const std::string context = method + " " + path;
  ASSIGN_OR_RETURN(HttpResponse response, Exchange(request, token, cancel, /*passed_on=*/false));
  if (response.cancelled) return Unavailable(context + ": cancelled");
  return ParseBody(response, context);
}

Result<HttpResponse> Client::Exchange(HttpRequest& request, std::string& token, CancelToken* cancel,
                                      bool passed_on) {
  auto send = [&] {
    return WithRetries(
        request, [&] { return transport_->Do(request, cancel); }, cancel);
  };
  ASSIGN_OR_RETURN(HttpResponse response, send());
  // An exec plugin's credential the server refuses is fetched anew once, as kubectl does; the
  // second try has what is left of the request's timeout. An answer the API server passed on
  // (a pod's 401 through pods/proxy) says nothing of the credential: only its own Status does.
  if (response.status == 401 && !token.empty() && (!passed_on || IsApiServerStatus(response)) &&
      token_.Refused(token)) {
    RETURN_IF_ERROR(Authorize(request, &token));
    ASSIGN_OR_RETURN(response, send());
  }
  return response;
}

Result<HttpResponse> Client::Send(HttpRequest request, CancelToken* cancel) {
  const bool has_accept =
      std::any_of(request.headers.begin(), request.headers.end(),
                  [](const std::string& h) { return h.rfind("Accept:", 0) == 0; });
  const size_t given = request.headers.size();
  std::string token;
  RETURN_IF_ERROR(Prepare(request, &token));
  // Prepare's first header is its Accept: the caller's own wins.
  if (has_accept) request.headers.erase(request.headers.begin() + given);
  return Exchange(request, token, cancel, /*passed_on=*/true);
}

Result<Json> Client::Get(const Resource& resource, const std::string& ns, const std::string& name,
                         const CallOptions& call) {
  return Request("GET", ObjectPath(resource, ns, name), nullptr, "", call);
}

Result<ObjectList> Client::List(const Resource& resource, const ListOptions& options,
                                const CallOptions& call) {
  ObjectList list;
  std::string next;
  do {
    auto params = SelectorParams(options.label_selector, options.field_selector);
    if (options.page_size > 0) params.emplace_back("limit", std::to_string(options.page_size));
    params.emplace_back("continue", next);
    ASSIGN_OR_RETURN(Json page,
                     Request("GET", CollectionPath(resource, options.ns) + QueryString(params),
                             nullptr, "", call));
    if (page.contains("items") && page["items"].is_array()) {
      for (Json& item : page["items"]) {
        // Items of a list carry no kind/apiVersion; put them back so objects stand alone.
        if (item.is_object() && !item.contains("kind")) {
          item["kind"] = resource.kind;
          item["apiVersion"] = resource.api_version;
        }
        list.items.push_back(std::move(item));
      }
    }
    list.resource_version = StringAt(page, "/metadata/resourceVersion");
    next = StringAt(page, "/metadata/continue");
  } while (!next.empty());
  return list;
}

Status Client::Watch(const Resource& resource, const WatchOptions& options,
                     const WatchHandler& handler, CancelToken* cancel) {
  auto params = SelectorParams(options.label_selector, options.field_selector);
  params.emplace_back("watch", "1");
  params.emplace_back("resourceVersion", options.resource_version);
  params.emplace_back("allowWatchBookmarks", options.allow_bookmarks ? "true" : "");
  params.emplace_back("timeoutSeconds",
                      options.timeout_seconds > 0 ? std::to_string(options.timeout_seconds) : "");
  HttpRequest request{.method = "GET",
                      .path = CollectionPath(resource, options.ns) + QueryString(params)};
  // The server ends the watch after timeoutSeconds; the client's own limit only catches a
  // connection that died silently.
  request.timeout = options.timeout_seconds > 0 ? std::chrono::seconds(options.timeout_seconds + 30)
                                                : std::chrono::milliseconds(0);
  RETURN_IF_ERROR(Prepare(request));
  const std::string context = "watch " + request.path;

  Status stream_error;  // a bad line or an ERROR event ends the stream with this
  LineHandler on_line = [&](std::string_view line) {
    Result<WatchEvent> event = ParseWatchEvent(line);
    if (!event.ok()) {
      stream_error = Unavailable(context + ": " + event.status().message());
      return false;
    }
    if (event->type == WatchEvent::Type::kError) {
      stream_error = ErrorStatusOf(*event, context);
      return false;
    }
    return handler(*event);
  };
  ASSIGN_OR_RETURN(
      HttpResponse response,
      WithRetries(
          request, [&] { return transport_->Stream(request, on_line, cancel); }, cancel));
  if (!stream_error.ok()) return stream_error;
  if (response.cancelled) return Status::Ok();
  if (response.status < 200 || response.status >= 300) {
    return ApiErrorFromResponse(response.status, response.body).ToStatus(context);
  }
  return Status::Ok();
}

Result<Json> Client::Create(const Resource& resource, const std::string& ns, const Json& object,
                            const CallOptions& call) {
  return Request("POST", CollectionPath(resource, ns), &object, "application/json", call);
}

Result<Json> Client::Update(const Resource& resource, const Json& object, const CallOptions& call) {
  return Request("PUT", ObjectPath(resource, NamespaceOf(object), NameOf(object)), &object,
                 "application/json", call);
}

Result<Json> Client::MergePatch(const Resource& resource, const std::string& ns,
                                const std::string& name, const Json& patch,
                                const std::string& subresource, const CallOptions& call) {
  return Request("PATCH", ObjectPath(resource, ns, name, subresource), &patch, kMergePatch, call);
}

Status Client::Delete(const Resource& resource, const std::string& ns, const std::string& name,
                      const CallOptions& call) {
  return Request("DELETE", ObjectPath(resource, ns, name), nullptr, "", call).status();
}

Result<Json> Client::SetPodCondition(const std::string& ns, const std::string& name,
                                     const Json& condition) {
  Json patch = {{"status", {{"conditions", Json::array({condition})}}}};
  return Request("PATCH", ObjectPath(kPods, ns, name, "status"), &patch, kStrategicMergePatch, {});
}

Status Client::DeletePod(const std::string& ns, const std::string& name, const std::string& uid) {
  Json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!uid.empty()) options["preconditions"] = {{"uid", uid}};
  return Request("DELETE", ObjectPath(kPods, ns, name), &options, "application/json", {}).status();
}

Result<Json> Client::PatchAnnotations(const Resource& resource, const std::string& ns,
                                      const std::string& name, const StringMapChanges& changes,
                                      const std::string& resource_version) {
  return MergePatch(resource, ns, name, MetadataMapPatch("annotations", changes, resource_version));
}

Result<Json> Client::PatchLabels(const Resource& resource, const std::string& ns,
                                 const std::string& name, const StringMapChanges& changes,
                                 const std::string& resource_version) {
  return MergePatch(resource, ns, name, MetadataMapPatch("labels", changes, resource_version));
}

Result<Json> Client::PatchStatus(const Resource& resource, const std::string& ns,
                                 const std::string& name, const Json& status,
                                 const std::string& resource_version) {
  Json patch = {{"status", status}};
  if (!resource_version.empty()) patch["metadata"] = {{"resourceVersion", resource_version}};
  return MergePatch(resource, ns, name, patch, "status");
}

Status Client::Bind(const std::string& ns, const std::string& pod, const std::string& uid,
                    const std::string& node, const std::map<std::string, std::string>& annotations,
                    const CallOptions& call) {
  Json metadata = {{"name", pod}, {"namespace", ns}};
  if (!uid.empty()) metadata["uid"] = uid;
  if (!annotations.empty()) metadata["annotations"] = annotations;
  Json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", metadata},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  return Request("POST", ObjectPath(kPods, ns, pod, "binding"), &binding, "application/json", call)
      .status();
}

Result<Json> Client::CreateEvent(const Json& involved, const std::string& type,
                                 const std::string& reason, const std::string& message,
                                 const std::string& component) {
  std::string ns = NamespaceOf(involved);
  if (ns.empty()) ns = "default";  // events about cluster-scoped objects live in "default"
  std::string now = Rfc3339Now(false);
  Json reference = {{"kind", involved.value("kind", "")},
                    {"apiVersion", involved.value("apiVersion", "")},
                    {"name", NameOf(involved)}};
  if (!NamespaceOf(involved).empty()) reference["namespace"] = NamespaceOf(involved);
  if (!UidOf(involved).empty()) reference["uid"] = UidOf(involved);
  if (!ResourceVersionOf(involved).empty()) {
    reference["resourceVersion"] = ResourceVersionOf(involved);
  }
  Json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"generateName", NameOf(involved) + "."}, {"namespace", ns}}},
                {"involvedObject", reference},
                {"type", type},
                {"reason", reason},
                {"message", message},
                {"source", {{"component", component}}},
                {"reportingComponent", component},
                {"firstTimestamp", now},
                {"lastTimestamp", now},
                {"count", 1}};
  return Create(kEvents, ns, event);
}

}  // namespace tessera::kube
