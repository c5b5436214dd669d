#include "fakeapiserver/pod_proxy.h"

#include <httplib.h>

#include <regex>
#include <string>

#include "fakeapiserver/api_error.h"
#include "fakeapiserver/api_handler.h"
#include "fakeapiserver/object_store.h"
#include "fakeapiserver/resource_types.h"

namespace tessera::testing {
namespace {

// namespace, [scheme:]name[:port], and the rest of the path (with its leading '/', or empty).
const std::regex& ProxyPath() {
  static const std::regex re(R"(^/api/v1/namespaces/([^/]+)/pods/([^/]+)/proxy(/.*)?$)");
  return re;
}

// Headers that describe one hop, not the answer (RFC 9110 7.6.1), and what httplib sets itself.
bool HopByHop(const std::string& name) {
  static const char* const kNames[] = {
      "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
      "trailer",    "host",       "content-length",   "authorization"};
  for (const char* n : kNames) {
    if (strcasecmp(name.c_str(), n) == 0) return true;
  }
  return false;
}

}  // namespace

bool IsPodProxyPath(std::string_view path) {
  return std::regex_match(path.begin(), path.end(), ProxyPath());
}

void ServePodProxy(ObjectStore& store, const httplib::Request& req, httplib::Response& res) {
  std::smatch m;
  if (!std::regex_match(req.path, m, ProxyPath())) {
    return SendError(res, ErrorForCode(404, "the server could not find the requested resource"));
  }
  const std::string ns = m[1];
  std::string target = m[2];
  const std::string rest = m[3].matched && m[3].length() > 0 ? m[3].str() : "/";
  std::string scheme = "http";
  if (size_t colon = target.find(':');
      colon != std::string::npos &&
      (target.substr(0, colon) == "http" || target.substr(0, colon) == "https")) {
    scheme = target.substr(0, colon);
    target = target.substr(colon + 1);
  }
  std::string port = "80";
  if (size_t colon = target.find(':'); colon != std::string::npos) {
    port = target.substr(colon + 1);
    target = target.substr(0, colon);
  }
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos) {
    return SendError(res, BadRequest("invalid port \"" + port + "\" in the proxy path"));
  }
  const ResourceType* pods = FindResourceType("", "v1", "pods");
  ApiResult<ObjectPtr> pod = store.Get(*pods, ns, target);
  if (!pod.ok()) return SendError(res, pod.error());
  const std::string ip = (*pod)->value("/status/podIP"_json_pointer, std::string());
  if (ip.empty()) {
    return SendError(res, ErrorForCode(503, "pod " + ns + "/" + target + " has no IP address"));
  }

  httplib::Client client(scheme + "://" + ip + ":" + port);
  client.enable_server_certificate_verification(false);
  client.set_connection_timeout(5);
  client.set_read_timeout(30);
  // The pod's answer comes back as it was sent; the fake's own server compresses for the client.
  client.set_decompress(false);
  httplib::Headers headers;
  for (const auto& [name, value] : req.headers) {
    if (!HopByHop(name) && strcasecmp(name.c_str(), "Accept-Encoding") != 0 &&
        strncasecmp(name.c_str(), "REMOTE_", 7) != 0 &&
        strncasecmp(name.c_str(), "LOCAL_", 6) != 0) {
      headers.emplace(name, value);
    }
  }
  std::string path = rest;
  if (!req.params.empty()) {
    path += "?" + httplib::detail::params_to_query_str(req.params);
  }
  const std::string content_type = req.get_header_value("Content-Type");
  httplib::Result answer =
      req.method == "GET"      ? client.Get(path, headers)
      : req.method == "HEAD"   ? client.Head(path, headers)
      : req.method == "POST"   ? client.Post(path, headers, req.body, content_type)
      : req.method == "PUT"    ? client.Put(path, headers, req.body, content_type)
      : req.method == "DELETE" ? client.Delete(path, headers, req.body, content_type)
                               : client.Patch(path, headers, req.body, content_type);
  if (!answer) {
    return SendError(res, ErrorForCode(503, "error trying to reach service: " +
                                                httplib::to_string(answer.error())));
  }
  res.status = answer->status;
  for (const auto& [name, value] : answer->headers) {
    if (!HopByHop(name) && strcasecmp(name.c_str(), "Content-Type") != 0) {
      res.set_header(name, value);
    }
  }
  res.set_content(answer->body, answer->get_header_value("Content-Type"));
}

}  // namespace tessera::testing
