// HttpJson: a small JSON-over-HTTP client for the demo, for the fake API server and the Tessera
// scheduler on this machine (plain HTTP). Each call returns the parsed body of a 2xx answer (a
// body that is not JSON, such as /readyz's, as a JSON string), or an error that names the method,
// path, status and body.
//
// Thread-safety: one HttpJson per thread (it holds one connection).
#pragma once

#include <httplib.h>

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::demo {

class HttpJson {
 public:
  // `base` is "http://host:port".
  explicit HttpJson(const std::string& base);

  Result<nlohmann::json> Get(const std::string& path);
  Result<nlohmann::json> Post(const std::string& path, const nlohmann::json& body);
  // A JSON merge patch (RFC 7386).
  Result<nlohmann::json> MergePatch(const std::string& path, const nlohmann::json& body);

 private:
  Result<nlohmann::json> Answer(const char* method, const std::string& path,
                                const httplib::Result& res);
  httplib::Client client_;
};

// "%2C"-style escaping for a query value (field selectors).
std::string QueryEscape(const std::string& value);

}  // namespace tessera::demo
