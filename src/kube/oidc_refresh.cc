#include "kube/oidc_refresh.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/strings.h"
#include "kube/http_transport.h"
#include "kube/resource.h"

namespace tessera::kube {

namespace {

using json = nlohmann::json;

// "https://idp:8443/realms/x" -> {"https://idp:8443", "/realms/x"}: the transport's server and
// the request's path.
std::pair<std::string, std::string> SplitUrl(const std::string& url) {
  size_t scheme = url.find("://");
  size_t slash = scheme == std::string::npos ? std::string::npos : url.find('/', scheme + 3);
  if (slash == std::string::npos) return {url, ""};
  return {url.substr(0, slash), url.substr(slash)};
}

// One request to `url` with the issuer's CA: the answer, whatever its status.
Result<HttpResponse> Send(const OidcConfig& oidc, const std::string& url, HttpRequest request) {
  auto [server, path] = SplitUrl(url);
  ASSIGN_OR_RETURN(std::unique_ptr<HttpTransport> transport,
                   HttpTransport::Create({.server = server,
                                          .ca_file = oidc.ca_file,
                                          .ca_pem = oidc.ca_pem,
                                          .origin = oidc.origin + " idp-issuer-url"}));
  request.path = path.empty() ? "/" : path;
  return transport->Do(request);
}

// The start of an answer, for errors: a page of HTML must not flood the terminal (client-go's 80).
std::string Excerpt(const std::string& body) {
  return body.size() > 80 ? body.substr(0, 80) + "..." : body;
}

// The issuer's token_endpoint, from its discovery document.
Result<std::string> TokenEndpoint(const OidcConfig& oidc, std::chrono::milliseconds timeout) {
  std::string issuer = oidc.issuer_url;
  while (EndsWith(issuer, "/")) issuer.pop_back();
  const std::string url = issuer + "/.well-known/openid-configuration";
  ASSIGN_OR_RETURN(
      HttpResponse answer,
      Send(oidc, url,
           {.method = "GET", .headers = {"Accept: application/json"}, .timeout = timeout}));
  if (answer.status != 200) {
    return Unavailable(oidc.origin + ": oidc: failed to query metadata endpoint " + url +
                       ": HTTP " + std::to_string(answer.status) + ": " + Excerpt(answer.body));
  }
  json metadata = json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  if (!metadata.is_object()) {
    return InvalidArgument(oidc.origin +
                           ": oidc: failed to decode provider discovery object from " + url);
  }
  std::string endpoint = metadata.value("token_endpoint", json()).is_string()
                             ? metadata["token_endpoint"].get<std::string>()
                             : "";
  if (endpoint.empty()) {
    return InvalidArgument(oidc.origin + ": oidc: discovery object " + url +
                           " doesn't contain a token_endpoint");
  }
  return endpoint;
}

// Replaces `path` with `text`, keeping its permissions: a new file renamed over the old one.
Status ReplaceFile(const std::string& path, const std::string& text) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return ErrnoStatus("reading kubeconfig", path, errno);
  const std::string temporary = path + ".tessera-" + std::to_string(getpid());
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
  if (fd < 0) return ErrnoStatus("writing kubeconfig", temporary, errno);
  size_t done = 0;
  int error = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (error == 0 && fsync(fd) != 0) error = errno;
  close(fd);
  if (error == 0 && rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    unlink(temporary.c_str());
    return ErrnoStatus("writing kubeconfig", path, error);
  }
  return Status::Ok();
}

// The kubeconfig with the user's new tokens, as YAML text.
Result<std::string> WithTokens(const OidcConfig& oidc) {
  const std::string& path = oidc.kubeconfig_path;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return FailedPrecondition("kubeconfig " + path +
                              " cannot be read any more to write the new tokens to");
  } catch (const YAML::Exception& e) {
    return InvalidArgument("kubeconfig " + path + ": not valid YAML: " + e.what());
  }
  YAML::Node config;
  if (root.IsMap() && root["users"].IsSequence()) {
    for (YAML::Node entry : root["users"]) {
      if (!entry.IsMap() || !entry["name"].IsScalar() ||
          entry["name"].as<std::string>() != oidc.user_name) {
        continue;
      }
      YAML::Node provider = entry["user"].IsMap() ? entry["user"]["auth-provider"] : YAML::Node();
      if (provider.IsMap() && provider["config"].IsMap()) config = provider["config"];
      break;
    }
  }
  if (!config) {
    return FailedPrecondition("kubeconfig " + path + " no longer has user \"" + oidc.user_name +
                              "\" with an auth-provider config to write the new tokens to");
  }
  config["id-token"] = oidc.id_token;
  config["refresh-token"] = oidc.refresh_token;
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

Result<OidcTokens> RefreshOidcTokens(const OidcConfig& oidc, std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(std::string endpoint, TokenEndpoint(oidc, timeout));
  std::string form = "grant_type=refresh_token&refresh_token=" + UrlEncode(oidc.refresh_token) +
                     "&client_id=" + UrlEncode(oidc.client_id);
  if (!oidc.client_secret.empty()) form += "&client_secret=" + UrlEncode(oidc.client_secret);
  ASSIGN_OR_RETURN(HttpResponse answer,
                   Send(oidc, endpoint,
                        {.method = "POST",
                         .headers = {"Content-Type: application/x-www-form-urlencoded",
                                     "Accept: application/json"},
                         .body = form,
                         .timeout = timeout}));
  if (answer.status < 200 || answer.status >= 300) {
    return Unavailable(oidc.origin + ": failed to refresh token: " + endpoint + " answered HTTP " +
                       std::to_string(answer.status) + ": " + Excerpt(answer.body));
  }
  json token = json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  if (!token.is_object()) {
    return Unavailable(oidc.origin + ": failed to refresh token: the answer of " + endpoint +
                       " is not JSON: " + Excerpt(answer.body));
  }
  OidcTokens fresh;
  if (token.value("id_token", json()).is_string()) fresh.id_token = token["id_token"];
  if (fresh.id_token.empty()) {
    return InvalidArgument(oidc.origin +
                           ": token response did not contain an id_token, either the scope "
                           "\"openid\" wasn't requested upon login, or the provider doesn't "
                           "support id_tokens as part of the refresh response");
  }
  if (token.value("refresh_token", json()).is_string())
    fresh.refresh_token = token["refresh_token"];
  return fresh;
}

Status PersistOidcTokens(const OidcConfig& oidc) {
  if (oidc.kubeconfig_path.empty()) return Status::Ok();
  // kubectl's lock: "<file>.lock", created exclusively while the file is rewritten.
  const std::string lock = oidc.kubeconfig_path + ".lock";
  int fd = open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return ErrnoStatus(
        "locking kubeconfig (another kubectl may be writing it; a lock file left "
        "by a crash must be removed)",
        lock, errno);
  }
  close(fd);
  Result<std::string> text = WithTokens(oidc);
  Status written = text.ok() ? ReplaceFile(oidc.kubeconfig_path, *text) : text.status();
  unlink(lock.c_str());
  return written;
}

}  // namespace tessera::kube
