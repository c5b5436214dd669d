// RecordingProxy: an HTTP or HTTPS server for tests that records the method, target and headers of
// every request it receives and forwards the request to another server (a FakeApiServer over
// http), answering with that server's status, content type and body. So a test sees exactly the
// headers a client sends while the client talks to a working API server. Watches are not
// streamed (the answer comes whole). MakeSelfSignedCertificate writes a key and certificate for
// 127.0.0.1 for the HTTPS form. Test-only; the recorded list is guarded by a mutex (the server
// thread appends while the test reads).
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::kube {

class RecordingProxy {
 public:
  struct Received {
    std::string method, target;  // target: path and query
    httplib::Headers headers;    // names case-insensitive, as httplib keeps them

    // Every value of header `name`, in the order sent.
    std::vector<std::string> Values(const std::string& name) const {
      std::vector<std::string> out;
      auto [begin, end] = headers.equal_range(name);
      for (auto it = begin; it != end; ++it) out.push_back(it->second);
      return out;
    }
    // The first value of `name`, "" when absent.
    std::string Value(const std::string& name) const {
      auto it = headers.find(name);
      return it == headers.end() ? "" : it->second;
    }
  };

  // Forwards to `target` ("http://127.0.0.1:PORT"); serves HTTPS when `cert` and `key` (PEM files)
  // are given.
  explicit RecordingProxy(const std::string& target, const std::string& cert = "",
                          const std::string& key = "")
      : target_(target), tls_(!cert.empty()) {
    if (tls_) {
      server_ = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str());
    } else {
      server_ = std::make_unique<httplib::Server>();
    }
    auto forward = [this](const httplib::Request& req, httplib::Response& res) {
      Forward(req, res);
    };
    server_->Get(".*", forward);
    server_->Post(".*", forward);
    server_->Put(".*", forward);
    server_->Patch(".*", forward);
    server_->Delete(".*", forward);
    port_ = server_->bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0) << "the recording proxy cannot bind";
    serving_ = std::thread([this] { server_->listen_after_bind(); });
    for (int i = 0; i < 500 && !server_->is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~RecordingProxy() {
    server_->stop();
    serving_.join();
  }
  RecordingProxy(const RecordingProxy&) = delete;
  RecordingProxy& operator=(const RecordingProxy&) = delete;

  std::string url() const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
  }

  std::vector<Received> received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  void Forward(const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mutex_);
      received_.push_back({req.method, req.target, req.headers});
    }
    httplib::Client upstream(target_);
    httplib::Request out;
    out.method = req.method;
    out.path = req.target;
    out.body = req.body;
    for (const auto& [name, value] : req.headers) {
      // httplib sets these itself for the forwarded request.
      if (name == "Host" || name == "Content-Length" || name == "Accept-Encoding" ||
          name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" ||
          name == "LOCAL_PORT") {
        continue;
      }
      out.headers.emplace(name, value);
    }
    httplib::Result answer = upstream.send(out);
    if (!answer) {
      res.status = 502;
      res.set_content("the recording proxy could not reach " + target_, "text/plain");
      return;
    }
    res.status = answer->status;
    res.set_content(answer->body, answer->get_header_value("Content-Type").c_str());
  }

  const std::string target_;
  const bool tls_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread serving_;
  mutable std::mutex mutex_;
  std::vector<Received> received_;  // guarded by mutex_
};

// Writes `dir`/server.key and `dir`/server.crt, a self-signed certificate for 127.0.0.1, with
// openssl; false when openssl fails.
inline bool MakeSelfSignedCertificate(const std::string& dir) {
  std::string command = "cd '" + dir +
                        "' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                        "-keyout server.key -out server.crt -days 1 -subj /CN=127.0.0.1 "
                        "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

}  // namespace tessera::kube
