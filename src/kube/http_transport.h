// HttpTransport: HTTP(S) requests to one API server over libcurl, with connection reuse.
//
// Owns the TLS settings of a ConnectionConfig (CA, client certificate and key as files or PEM in
// memory, insecure-skip-tls-verify) and a small pool of curl handle pairs (an easy handle and the
// multi handle that runs it and keeps its connection cache): a request borrows a pair and gives it
// back, so its open connection serves the next request. A CancelToken wakes the multi handle, so
// any transfer (a watch in particular) can be ended from another thread at once. This layer does
// one attempt: authentication headers, rate limits, retries and error mapping belong to Client.
// Thread-safe: concurrent requests use separate handles.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kube/cancel_token.h"
#include "kube/connection.h"

namespace tessera::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;                  // path and query, starting with '/'
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  std::chrono::milliseconds timeout{30'000};  // whole transfer; 0 = none
};

struct HttpResponse {
  int status = 0;
  std::string body;                        // empty for a 2xx streamed response
  std::optional<int> retry_after_seconds;  // the Retry-After header, when it holds seconds
  // The final answer's header lines as {name, value}, in order (for callers that pass answers
  // on, such as kubectl tessera ui). The body is decoded: Content-Encoding names what was sent.
  std::vector<std::pair<std::string, std::string>> headers;
  bool cancelled = false;  // ended by the CancelToken or the line callback
};

// Receives a streamed 2xx body line by line (without the '\n'); returns false to stop.
using LineHandler = std::function<bool(std::string_view line)>;

class HttpTransport {
 public:
  // Checks the configuration (server URL scheme, readable material) and prepares the pool.
  static Result<std::unique_ptr<HttpTransport>> Create(const ConnectionConfig& connection);
  ~HttpTransport();

  // Sends `request` and collects the whole response. A non-2xx status is a response, not an
  // error; Unavailable/DeadlineExceeded only when no response arrived (connect, TLS, timeout).
  Result<HttpResponse> Do(const HttpRequest& request, CancelToken* cancel = nullptr);

  // Like Do, but a 2xx body goes to `on_line` as it arrives, one line at a time; a non-2xx body is
  // collected into the response. Ends when the server ends the body, on_line returns false, or
  // `cancel` fires (response.cancelled).
  Result<HttpResponse> Stream(const HttpRequest& request, const LineHandler& on_line,
                              CancelToken* cancel = nullptr);

  // Connections opened so far (for tests of connection reuse).
  long connections_opened() const { return connections_opened_.load(); }
  const std::string& server() const { return connection_.server; }

 private:
  struct Handles;  // a CURL* and its CURLM*
  explicit HttpTransport(ConnectionConfig connection);
  Handles* Borrow();
  void GiveBack(Handles* handles);
  Result<HttpResponse> Perform(const HttpRequest& request, const LineHandler* on_line,
                               CancelToken* cancel);

  const ConnectionConfig connection_;  // constant after construction

  std::mutex mutex_;
  std::vector<Handles*> idle_;  // guarded by mutex_: handles with warm connections, owned
  std::atomic<long> connections_opened_{0};
};

}  // namespace tessera::kube
