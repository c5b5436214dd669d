#include "inspect/ui_proxy.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <cerrno>
#include <cstring>

#include "common/strings.h"

namespace tessera::inspect {
namespace {

// Paths and queries passed on are made of these only: what the page asks for, nothing to
// re-encode, no "..".
bool SafeText(const std::string& text, const char* extra) {
  for (char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::strchr(extra, c) != nullptr;
    if (!ok || c == '\0') return false;
  }
  return text.find("..") == std::string::npos;
}

// The scheduler's answer headers the page needs; the rest (the API server's own, hop-by-hop,
// Content-Encoding and Content-Length of a body the client has already decoded) stay behind.
bool PassedOnHeader(const std::string& name) {
  static const char* const kNames[] = {"Content-Type",
                                       "ETag",
                                       "Cache-Control",
                                       "Vary",
                                       "Location",
                                       "Last-Modified",
                                       "Content-Security-Policy",
                                       "X-Content-Type-Options",
                                       "Referrer-Policy",
                                       "X-Frame-Options",
                                       "Retry-After",
                                       "WWW-Authenticate"};
  for (const char* n : kNames) {
    if (strcasecmp(name.c_str(), n) == 0) return true;
  }
  return false;
}

// Why `address`:`port` cannot be bound, in words ("" when it can), checked with a socket of our
// own so that the reason (taken, privileged) can be told, which httplib does not report.
std::string BindProblem(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) {
    return "the address cannot be resolved";
  }
  int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  std::string problem;
  if (fd < 0) {
    problem = std::strerror(errno);
  } else {
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
      problem = errno == EADDRINUSE ? "the port is taken by another program"
                : errno == EACCES   ? "the port is privileged (below 1024)"
                                    : std::strerror(errno);
    }
    close(fd);
  }
  freeaddrinfo(found);
  return problem;
}

void SendText(httplib::Response& res, int status, const std::string& text) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content("kubectl tessera ui: " + text + "\n", "text/plain; charset=utf-8");
}

}  // namespace

std::optional<std::string> AllowedUpstreamPath(const std::string& method, const std::string& path,
                                               const std::string& query) {
  if (!SafeText(path, "/._-") || !SafeText(query, "=&%._-~+,:")) return std::nullopt;
  const std::string with_query = query.empty() ? path : path + "?" + query;
  if (method == "GET" || method == "HEAD") {
    if (path == "/ui" || StartsWith(path, "/ui/") || path == "/inspect") return with_query;
    return std::nullopt;
  }
  if (method == "POST" && path == "/fit") return with_query;
  return std::nullopt;
}

bool IsLoopbackAddress(const std::string& address) {
  if (address == "localhost" || address == "::1") return true;
  in_addr v4{};
  return inet_pton(AF_INET, address.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

UiProxy::UiProxy(kube::Client& client, UiProxyOptions options)
    : client_(client), options_(std::move(options)) {}

UiProxy::~UiProxy() {
  Stop();
}

Status UiProxy::Start() {
  if (!IsLoopbackAddress(options_.address)) {
    return InvalidArgument("--address " + options_.address +
                           ": give a loopback address (127.0.0.1, ::1 or localhost); the page is "
                           "served with your Kubernetes credentials, so it is not offered to "
                           "other machines");
  }
  if (options_.port < 0 || options_.port > 65535) {
    return InvalidArgument("--port " + std::to_string(options_.port) +
                           ": give a port from 1 to 65535, or 0 for any free port");
  }
  const std::string where = options_.address + ":" + std::to_string(options_.port);
  if (options_.port != 0) {
    if (std::string problem = BindProblem(options_.address, options_.port); !problem.empty()) {
      return Unavailable("cannot listen on " + where + ": " + problem +
                         "; choose another with --port (0 picks any free port)");
    }
  }
  server_ = std::make_unique<httplib::Server>();
  if (options_.address == "::1") server_->set_address_family(AF_INET6);
  auto handle = [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); };
  server_->Get(".*", handle);
  server_->Post(".*", handle);
  int port = options_.port;
  if (port == 0) {
    port = server_->bind_to_any_port(options_.address);
  } else if (!server_->bind_to_port(options_.address, port)) {
    port = -1;
  }
  if (port <= 0) return Unavailable("cannot listen on " + where);
  port_ = port;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void UiProxy::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

bool UiProxy::HostAllowed(const std::string& host) const {
  const std::string port = ":" + std::to_string(port_);
  for (const std::string& name : {std::string("localhost"), std::string("127.0.0.1"),
                                  std::string("[::1]"), options_.address}) {
    if (host == name + port) return true;
  }
  return false;
}

void UiProxy::Handle(const httplib::Request& req, httplib::Response& res) {
  const std::string host = req.get_header_value("Host");
  if (!HostAllowed(host)) {
    return SendText(res, 403,
                    "Host \"" + host + "\" is not this proxy's address; open it as " +
                        "http://127.0.0.1:" + std::to_string(port_) + "/ui/");
  }
  if (req.path == "/" && req.method != "POST") return res.set_redirect("/ui/");
  const size_t mark = req.target.find('?');
  const std::string query = mark == std::string::npos ? "" : req.target.substr(mark + 1);
  std::optional<std::string> upstream = AllowedUpstreamPath(req.method, req.path, query);
  if (!upstream) {
    return SendText(res, 404,
                    req.method + " " + req.path +
                        " is not passed on: only the page's requests are (GET /ui/..., GET "
                        "/inspect, POST /fit)");
  }
  if (req.method == "POST") {
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty() && origin != "http://" + host) {
      return SendText(res, 403, "a POST from another site (Origin " + origin + ") is refused");
    }
    if (!StartsWith(req.get_header_value("Content-Type"), "application/json")) {
      return SendText(res, 415, "POST /fit takes a JSON body (Content-Type: application/json)");
    }
  }
  // A HEAD goes on as a GET (httplib leaves the body out of the answer), the transport being
  // made for answers with bodies.
  kube::HttpRequest out{.method = req.method == "HEAD" ? "GET" : req.method,
                        .path = options_.upstream + *upstream,
                        .body = req.body,
                        .timeout = options_.timeout};
  for (const char* name : {"Accept", "If-None-Match", "If-Modified-Since", "Content-Type",
                           "X-Tessera-Authorization"}) {
    if (req.has_header(name))
      out.headers.push_back(std::string(name) + ": " + req.get_header_value(name));
  }
  if (req.has_header("Authorization") && !req.has_header("X-Tessera-Authorization")) {
    out.headers.push_back("X-Tessera-Authorization: " + req.get_header_value("Authorization"));
  }
  Result<kube::HttpResponse> answer = client_.Send(std::move(out));
  if (!answer.ok()) {
    return SendText(res, 502, "no answer through the API server: " + answer.status().message());
  }
  res.status = answer->status;
  std::string content_type = "application/octet-stream";
  for (const auto& [name, value] : answer->headers) {
    if (!PassedOnHeader(name)) continue;
    if (strcasecmp(name.c_str(), "Content-Type") == 0) {
      content_type = value;
    } else if (strcasecmp(name.c_str(), "Location") == 0 && StartsWith(value, options_.upstream)) {
      // The API server rewrites the scheduler's redirects into its own proxy path.
      res.set_header(name, value.substr(options_.upstream.size()));
    } else {
      res.set_header(name, value);
    }
  }
  if (answer->status != 304) res.set_content(answer->body, content_type);
}

}  // namespace tessera::inspect
