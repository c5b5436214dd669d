#include "demo/http_json.h"

#include <cctype>
#include <cstdio>

namespace tessera::demo {

HttpJson::HttpJson(const std::string& base) : client_(base) {
  client_.set_connection_timeout(5, 0);
  client_.set_read_timeout(30, 0);
  client_.set_write_timeout(30, 0);
}

Result<nlohmann::json> HttpJson::Get(const std::string& path) {
  return Answer("GET", path, client_.Get(path));
}

Result<nlohmann::json> HttpJson::Post(const std::string& path, const nlohmann::json& body) {
  return Answer("POST", path, client_.Post(path, body.dump(), "application/json"));
}

Result<nlohmann::json> HttpJson::MergePatch(const std::string& path, const nlohmann::json& body) {
  return Answer("PATCH", path, client_.Patch(path, body.dump(), "application/merge-patch+json"));
}

Result<nlohmann::json> HttpJson::Answer(const char* method, const std::string& path,
                                        const httplib::Result& res) {
  std::string what = std::string(method) + " " + path;
  if (!res) return Unavailable(what + ": " + httplib::to_string(res.error()));
  if (res->status < 200 || res->status > 299) {
    return Unavailable(what + ": HTTP " + std::to_string(res->status) + ": " + res->body);
  }
  nlohmann::json body = nlohmann::json::parse(res->body, nullptr, false);
  return body.is_discarded() ? nlohmann::json(res->body) : body;
}

std::string QueryEscape(const std::string& value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace tessera::demo
