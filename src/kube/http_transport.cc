#include "kube/http_transport.h"

#include <curl/curl.h>

#include <mutex>

#include "common/strings.h"

namespace tessera::kube {

namespace {

constexpr size_t kMaxIdleHandles = 8;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// State shared with curl's callbacks during one transfer.
struct Transfer {
  CURL* curl = nullptr;
  const LineHandler* on_line = nullptr;
  HttpResponse* response = nullptr;
  std::string pending;     // a streamed line not yet complete
  bool streaming = false;  // decided at the first body byte: 2xx and a line handler
  bool decided = false;
  bool stopped_by_handler = false;
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  size_t colon = line.find(':');
  if (colon != std::string_view::npos && ToLower(Trim(line.substr(0, colon))) == "retry-after") {
    std::string_view value = Trim(line.substr(colon + 1));
    int seconds = 0;
    bool digits = !value.empty() && value.size() < 7;
    for (char c : value) {
      if (c < '0' || c > '9')
        digits = false;
      else
        seconds = seconds * 10 + (c - '0');
    }
    if (digits) transfer->response->retry_after_seconds = seconds;
  }
  if (colon != std::string_view::npos) {
    transfer->response->headers.emplace_back(std::string(Trim(line.substr(0, colon))),
                                             std::string(Trim(line.substr(colon + 1))));
  }
  // A new status line (after a 100 Continue or a redirect) starts a new header block.
  if (StartsWith(line, "HTTP/")) {
    transfer->response->retry_after_seconds.reset();
    transfer->response->headers.clear();
  }
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  size_t bytes = size * count;
  if (!transfer->decided) {
    long code = 0;
    curl_easy_getinfo(transfer->curl, CURLINFO_RESPONSE_CODE, &code);
    transfer->streaming = transfer->on_line != nullptr && code >= 200 && code < 300;
    transfer->decided = true;
  }
  if (!transfer->streaming) {
    transfer->response->body.append(data, bytes);
    return bytes;
  }
  transfer->pending.append(data, bytes);
  size_t start = 0;
  for (size_t nl; (nl = transfer->pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(transfer->pending.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (!(*transfer->on_line)(line)) {
      transfer->stopped_by_handler = true;
      return CURL_WRITEFUNC_ERROR;
    }
  }
  transfer->pending.erase(0, start);
  return bytes;
}

void SetBlob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(curl, option, &blob);
}

}  // namespace

struct HttpTransport::Handles {
  CURL* easy = curl_easy_init();
  CURLM* multi = curl_multi_init();
  ~Handles() {
    if (multi != nullptr) curl_multi_cleanup(multi);
    if (easy != nullptr) curl_easy_cleanup(easy);
  }
};

HttpTransport::HttpTransport(ConnectionConfig connection) : connection_(std::move(connection)) {}

HttpTransport::~HttpTransport() {
  for (Handles* handles : idle_) delete handles;
}

Result<std::unique_ptr<HttpTransport>> HttpTransport::Create(const ConnectionConfig& connection) {
  GlobalInit();
  if (!StartsWith(connection.server, "https://") && !StartsWith(connection.server, "http://")) {
    return InvalidArgument("API server \"" + connection.server +
                           "\" must start with https:// or http:// (" + connection.origin + ")");
  }
  return std::unique_ptr<HttpTransport>(new HttpTransport(connection));
}

HttpTransport::Handles* HttpTransport::Borrow() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      Handles* handles = idle_.back();
      idle_.pop_back();
      return handles;
    }
  }
  return new Handles();
}

void HttpTransport::GiveBack(Handles* handles) {
  {
    std::lock_guard lock(mutex_);
    if (idle_.size() < kMaxIdleHandles) {
      idle_.push_back(handles);
      return;
    }
  }
  delete handles;
}

Result<HttpResponse> HttpTransport::Do(const HttpRequest& request, CancelToken* cancel) {
  return Perform(request, nullptr, cancel);
}

Result<HttpResponse> HttpTransport::Stream(const HttpRequest& request, const LineHandler& on_line,
                                           CancelToken* cancel) {
  return Perform(request, &on_line, cancel);
}

Result<HttpResponse> HttpTransport::Perform(const HttpRequest& request, const LineHandler* on_line,
                                            CancelToken* cancel) {
  const std::string context = request.method + " " + request.path;
  HttpResponse response;
  if (cancel != nullptr && cancel->cancelled()) {
    response.cancelled = true;
    return response;
  }
  std::unique_ptr<Handles> handles(Borrow());
  if (handles->easy == nullptr || handles->multi == nullptr) {
    return Internal(context + ": curl could not allocate a handle");
  }
  CURL* curl = handles->easy;
  CURLM* multi = handles->multi;
  curl_easy_reset(curl);

  Transfer transfer{.curl = curl, .on_line = on_line, .response = &response};
  std::string url = connection_.server + request.path;
  char error_buffer[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10'000L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode

  if (request.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    // A bodiless DELETE sends no body (and so no default form Content-Type).
    if (!request.body.empty() || request.method != "DELETE") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    }
  }
  curl_slist* headers = nullptr;
  for (const std::string& header : request.headers) {
    headers = curl_slist_append(headers, header.c_str());
  }
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip for bodies
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

  if (connection_.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!connection_.ca_pem.empty()) SetBlob(curl, CURLOPT_CAINFO_BLOB, connection_.ca_pem);
  if (!connection_.ca_file.empty())
    curl_easy_setopt(curl, CURLOPT_CAINFO, connection_.ca_file.c_str());
  if (!connection_.client_cert_pem.empty()) {
    SetBlob(curl, CURLOPT_SSLCERT_BLOB, connection_.client_cert_pem);
  }
  if (!connection_.client_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, connection_.client_cert_file.c_str());
  }
  if (!connection_.client_key_pem.empty()) {
    SetBlob(curl, CURLOPT_SSLKEY_BLOB, connection_.client_key_pem);
  }
  if (!connection_.client_key_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLKEY, connection_.client_key_file.c_str());
  }

  curl_multi_add_handle(multi, curl);
  bool attached = cancel == nullptr || cancel->Attach(multi);
  CURLcode result = CURLE_OK;
  bool finished = false;
  while (attached && !finished) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) {
      result = CURLE_FAILED_INIT;
      snprintf(error_buffer, sizeof error_buffer, "%s", curl_multi_strerror(mc));
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        result = msg->data.result;
        finished = true;
      }
    }
    if (finished || (cancel != nullptr && cancel->cancelled())) break;
    curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  if (cancel != nullptr && attached) cancel->Detach();
  bool cancelled = !attached || (cancel != nullptr && cancel->cancelled() && !finished);

  long opened = 0;
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &opened);
  connections_opened_ += opened;
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_multi_remove_handle(multi, curl);
  curl_slist_free_all(headers);
  GiveBack(handles.release());

  response.status = static_cast<int>(code);
  if (cancelled || transfer.stopped_by_handler) {
    response.cancelled = true;
    return response;
  }
  if (result != CURLE_OK) {
    std::string why = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(result);
    StatusCode status_code = result == CURLE_OPERATION_TIMEDOUT ? StatusCode::kDeadlineExceeded
                                                                : StatusCode::kUnavailable;
    return Status(status_code, context + " to " + connection_.server + ": " + why);
  }
  // A streamed body may end without a final newline.
  if (transfer.streaming && !transfer.pending.empty()) (*on_line)(transfer.pending);
  return response;
}

}  // namespace tessera::kube
