#include "kube/connection_overrides.h"

#include "common/strings.h"

namespace tessera::kube {

Status ApplyOverrides(const ConnectionOverrides& overrides, ConnectionConfig& conn) {
  if (!overrides.server.empty()) {
    conn.server = overrides.server;
    while (EndsWith(conn.server, "/")) conn.server.pop_back();
    if (!StartsWith(conn.server, "https://") && !StartsWith(conn.server, "http://")) {
      return InvalidArgument("--server " + overrides.server +
                             ": must start with https:// or http://");
    }
  }
  if (!overrides.certificate_authority.empty() && overrides.insecure_skip_tls_verify) {
    return InvalidArgument(
        "--certificate-authority and --insecure-skip-tls-verify were both given: a CA to verify "
        "the server with and no verification at once is not allowed; give one of them");
  }
  // Either flag replaces the kubeconfig's whole server verification (clientcmd does the same), so
  // a kubeconfig CA never sits beside --insecure-skip-tls-verify.
  if (!overrides.certificate_authority.empty() || overrides.insecure_skip_tls_verify) {
    conn.ca_file = overrides.certificate_authority;
    conn.ca_pem.clear();
    conn.insecure_skip_tls_verify = overrides.insecure_skip_tls_verify;
  }
  if (!overrides.token.empty()) {
    conn.token = overrides.token;
    conn.token_file.clear();  // the flag's token, not the file's next re-read
  }
  if (!overrides.username.empty()) conn.username = overrides.username;
  if (!overrides.password.empty()) conn.password = overrides.password;
  if (!overrides.as.empty()) conn.impersonate.user = overrides.as;
  if (!overrides.as_uid.empty()) conn.impersonate.uid = overrides.as_uid;
  if (!overrides.as_groups.empty()) conn.impersonate.groups = overrides.as_groups;
  return Status::Ok();
}

Status CheckCredentials(const ConnectionConfig& conn) {
  const std::string& where = conn.origin;
  bool token = !conn.token.empty() || !conn.token_file.empty();
  bool basic = !conn.username.empty() || !conn.password.empty();
  if (token && basic) {
    return InvalidArgument(where +
                           ": more than one authentication method found; found [token "
                           "basicAuth], only one is allowed (drop the token or the "
                           "username/password)");
  }
  if (conn.username.empty() && !conn.password.empty()) {
    return InvalidArgument(where + ": a password without a username; basic auth needs both");
  }
  const Impersonation& as = conn.impersonate;
  // Each value becomes a header line of its own: a line break in one would start another header.
  std::vector<std::string> values = as.groups;
  values.insert(values.end(), {as.user, as.uid});
  // (Extra keys are escaped into the header name instead.)
  for (const auto& [key, extras] : as.extra)
    values.insert(values.end(), extras.begin(), extras.end());
  for (const std::string& value : values) {
    if (value.find_first_of("\r\n") != std::string::npos) {
      return InvalidArgument(where + ": the impersonation value \"" + value +
                             "\" holds a line break, which no HTTP header can carry");
    }
  }
  if (as.user.empty() && (!as.uid.empty() || !as.groups.empty() || !as.extra.empty())) {
    return InvalidArgument(where +
                           ": requesting uid, groups or user-extra without impersonating a user "
                           "(give --as USER, or as: in the kubeconfig user)");
  }
  if (!conn.username.empty() && !StartsWith(conn.server, "https://")) {
    return InvalidArgument(where + ": basic auth (username " + conn.username + ") is not sent to " +
                           conn.server +
                           ": over plain http the password crosses the network readable by "
                           "anyone on the path; use the server's https:// address");
  }
  return Status::Ok();
}

}  // namespace tessera::kube
