#include "fakeapiserver/test_client.h"

namespace tessera::testing {

using nlohmann::json;

namespace {

HttpAnswer ToAnswer(const httplib::Result& r) {
  HttpAnswer a;
  if (!r) return a;
  a.status = r->status;
  a.body = json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (a.body.is_discarded()) a.body = r->body;
  a.retry_after = r->get_header_value("Retry-After");
  return a;
}

std::unique_ptr<httplib::Client> MakeClient(const std::string& url, const std::string& ca,
                                            const std::string& cert, const std::string& key) {
  auto c = cert.empty() ? std::make_unique<httplib::Client>(url)
                        : std::make_unique<httplib::Client>(url, cert, key);
  if (!ca.empty()) c->set_ca_cert_path(ca);
  c->set_connection_timeout(5);
  c->set_read_timeout(30);
  return c;
}

}  // namespace

TestClient::TestClient(const std::string& url, const std::string& ca_file,
                       const std::string& cert_file, const std::string& key_file)
    : client_(MakeClient(url, ca_file, cert_file, key_file)) {}

HttpAnswer TestClient::Get(const std::string& path) {
  return ToAnswer(client_->Get(path));
}

HttpAnswer TestClient::Post(const std::string& path, const std::string& body) {
  return ToAnswer(client_->Post(path, body, "application/json"));
}

HttpAnswer TestClient::Put(const std::string& path, const json& body) {
  return ToAnswer(client_->Put(path, body.dump(), "application/json"));
}

HttpAnswer TestClient::Patch(const std::string& path, const std::string& content_type,
                             const std::string& body) {
  return ToAnswer(client_->Patch(path, body, content_type));
}

HttpAnswer TestClient::Delete(const std::string& path, const std::string& body) {
  return ToAnswer(client_->Delete(path, body, "application/json"));
}

WatchReader::WatchReader(const std::string& url, const std::string& path)
    : client_(MakeClient(url, "", "", "")) {
  thread_ = std::thread([this, path] {
    client_->Get(
        path,
        [this](const httplib::Response& r) {
          std::lock_guard lock(mu_);
          status_ = r.status;
          cv_.notify_all();
          return !closing_;
        },
        [this](const char* data, size_t n) {
          if (closing_) return false;
          partial_.append(data, n);
          size_t nl;
          while ((nl = partial_.find('\n')) != std::string::npos) {
            json event = json::parse(partial_.substr(0, nl), nullptr, false);
            partial_.erase(0, nl + 1);
            std::lock_guard lock(mu_);
            events_.push_back(event.is_discarded() ? json("unparsable line") : event);
            cv_.notify_all();
          }
          return true;
        });
    std::lock_guard lock(mu_);
    ended_ = true;
    cv_.notify_all();
  });
}

WatchReader::~WatchReader() {
  closing_ = true;
  // stop() closes the connection only once it exists: repeat until the reader has returned.
  for (int i = 0; i < 200 && !WaitEnded(std::chrono::milliseconds(0)); ++i) {
    client_->stop();
    WaitEnded(std::chrono::milliseconds(50));
  }
  thread_.join();
}

std::optional<json> WatchReader::Next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty() || ended_; });
  if (events_.empty()) return std::nullopt;
  json e = std::move(events_.front());
  events_.pop_front();
  return e;
}

bool WatchReader::WaitEnded(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return ended_; });
}

bool WatchReader::WaitStarted(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return status_ != 0 || ended_; });
}

int WatchReader::status() {
  std::lock_guard lock(mu_);
  return status_;
}

json PodJson(const std::string& name, const json& labels) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  if (!labels.is_null()) pod["metadata"]["labels"] = labels;
  return pod;
}

}  // namespace tessera::testing
