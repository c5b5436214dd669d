// Test helpers for the fake API server's tests: a small JSON-over-HTTP client and a watch reader.
// Test-only code. Thread-compatible: use one TestClient per thread; a WatchReader reads on its
// own thread and hands events over through a mutex-guarded queue.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace tessera::testing {

struct HttpAnswer {
  int status = 0;       // 0: no answer (connection failed)
  nlohmann::json body;  // parsed JSON, or the raw text as a JSON string when not JSON
  std::string retry_after;
};

class TestClient {
 public:
  // `url` is FakeApiServer::url(); the TLS files are used for https URLs (empty: none).
  explicit TestClient(const std::string& url, const std::string& ca_file = "",
                      const std::string& cert_file = "", const std::string& key_file = "");

  HttpAnswer Get(const std::string& path);
  HttpAnswer Post(const std::string& path, const std::string& body);
  HttpAnswer Post(const std::string& path, const nlohmann::json& body) {
    return Post(path, body.dump());
  }
  HttpAnswer Put(const std::string& path, const nlohmann::json& body);
  HttpAnswer Patch(const std::string& path, const std::string& content_type,
                   const std::string& body);
  HttpAnswer Delete(const std::string& path, const std::string& body = "");

 private:
  std::unique_ptr<httplib::Client> client_;
};

// Opens a watch (GET `path`, which must include watch=1) and collects its events.
class WatchReader {
 public:
  WatchReader(const std::string& url, const std::string& path);
  ~WatchReader();  // closes the connection and joins the reader thread

  // The next event, or nullopt when none arrives within `timeout` or the stream has ended.
  std::optional<nlohmann::json> Next(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits up to `timeout` for the stream to end; true when it has (all events stay readable).
  bool WaitEnded(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits up to `timeout` for the answer's headers (the server has registered the watch).
  bool WaitStarted(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  int status();  // the HTTP status once the headers arrived (0 before)

 private:
  std::unique_ptr<httplib::Client> client_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<nlohmann::json> events_;  // guarded by mu_
  std::string partial_;                // reader thread only
  std::atomic<bool> closing_{false};
  bool ended_ = false;  // guarded by mu_
  int status_ = 0;      // guarded by mu_
};

// A pod object with `name` (and optional labels), for creating.
nlohmann::json PodJson(const std::string& name, const nlohmann::json& labels = nullptr);

}  // namespace tessera::testing
