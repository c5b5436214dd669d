// ConnectionConfig: where the API server is and how to authenticate to it, whichever way it was
// found (kube/connection.h: the rules; kube/kubeconfig.h: a kubeconfig's current context;
// kube/connection_overrides.h: kubectl's flags over it). A plain value: thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kube/exec_credential.h"
#include "kube/oidc_token.h"

namespace tessera::kube {

// Whom every request acts as (kubectl's --as, --as-group, --as-uid; a kubeconfig user's as,
// as-groups, as-uid, as-user-extra): sent as the Impersonate-* headers.
struct Impersonation {
  std::string user;                 // Impersonate-User; the others need it (CheckCredentials)
  std::string uid;                  // Impersonate-Uid
  std::vector<std::string> groups;  // one Impersonate-Group header each
  std::map<std::string, std::vector<std::string>> extra;  // Impersonate-Extra-<key>, per value

  bool empty() const { return user.empty() && uid.empty() && groups.empty() && extra.empty(); }
};

struct ConnectionConfig {
  std::string server;  // "https://10.0.0.1:6443" (no trailing slash)
  bool insecure_skip_tls_verify = false;
  // PEM material, each either as a file path or in memory (the kubeconfig's "-data" fields).
  std::string ca_file, ca_pem;
  std::string client_cert_file, client_cert_pem;
  std::string client_key_file, client_key_pem;
  // Bearer token: given, or read from a file (re-read about every minute).
  std::string token, token_file;
  // Basic auth (Authorization: Basic), sent only to an https:// server.
  std::string username, password;
  // An exec credential plugin (kube/exec_credential.h), run by the Client for its token or client
  // certificate.
  std::optional<ExecConfig> exec;
  // The oidc auth-provider: its id-token is the bearer token while it is valid.
  std::optional<OidcConfig> oidc;
  Impersonation impersonate;
  // Where this came from, for logs and errors: "kubeconfig /root/.kube/config context kind-x".
  std::string origin;
};

}  // namespace tessera::kube
