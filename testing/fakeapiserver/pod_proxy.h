// The pods/proxy subresource of the fake API server: requests to
// /api/v1/namespaces/NS/pods/[SCHEME:]NAME[:PORT]/proxy/PATH go to PATH on the pod's
// status.podIP at PORT (80 without one), over SCHEME (http, or https without verifying the
// certificate, as the real API server does), and the pod's answer comes back: its status, body
// and headers. As in the real server, the client's Authorization header is not passed on, a
// missing pod is 404 NotFound, and a pod without an IP, or one that does not answer, is 503.
// Thread-safe: each request reads the store and opens its own connection.
#pragma once

#include <string_view>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace tessera::testing {

class ObjectStore;

// True when `path` names a pod's proxy subresource (then ServePodProxy answers it).
bool IsPodProxyPath(std::string_view path);

void ServePodProxy(ObjectStore& store, const httplib::Request& req, httplib::Response& res);

}  // namespace tessera::testing
