// ConnectionOverrides: kubectl's connection flags, and the one place where they are laid over
// what a kubeconfig (or the in-cluster service account) gives. The precedence is kubectl's
// (client-go clientcmd): a flag over the kubeconfig over the defaults, field by field:
//
//   --context NAME     the context instead of current-context          (kube/kubeconfig.cc)
//   --cluster NAME     that clusters[] entry instead of the context's  (kube/kubeconfig.cc)
//   --user NAME        that users[] entry instead of the context's     (kube/kubeconfig.cc)
//   --server URL       the cluster's server; with no kubeconfig at all, the whole cluster
//   --certificate-authority FILE   the CA, in place of certificate-authority[-data]; clears
//                      insecure-skip-tls-verify
//   --insecure-skip-tls-verify     skip verification; clears the kubeconfig's CA
//   --token TOKEN      the bearer token, in place of token and tokenFile
//   --username, --password         basic auth, each in place of its own field
//   --as, --as-uid     the impersonated user and UID, each in place of the user's as / as-uid
//   --as-group GROUP   (repeatable) the impersonated groups, in place of the user's as-groups
//
// The credential rules after the merge (CheckCredentials) are kubectl's too: a bearer token and
// basic auth together are refused, and so is impersonating groups, a UID or extras without a user.
// Plain values and functions: thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "kube/connection_config.h"

namespace tessera::kube {

struct ConnectionOverrides {
  std::string context;  // --context
  std::string cluster;  // --cluster
  std::string user;     // --user
  // The cluster's fields.
  std::string server;                     // --server
  std::string certificate_authority;      // --certificate-authority (a PEM file)
  bool insecure_skip_tls_verify = false;  // --insecure-skip-tls-verify (only true overrides)
  // The user's fields.
  std::string token;                   // --token
  std::string username, password;      // --username, --password
  std::string as, as_uid;              // --as, --as-uid
  std::vector<std::string> as_groups;  // --as-group, repeated
};

// Lays the field overrides (not context/cluster/user, which choose entries) over `conn`. The server
// must start with https:// or http://; a CA together with insecure-skip-tls-verify is refused, as
// kubectl refuses it. InvalidArgument naming the flag; `conn` is then unspecified.
Status ApplyOverrides(const ConnectionOverrides& overrides, ConnectionConfig& conn);

// kubectl's checks of the credentials `conn` ends with (what the Client would send): not a bearer
// token (or token file) and basic auth at once; no password without a username; no impersonated
// UID, groups or extras without an impersonated user, and no line break in any of them (each is a
// header line); basic auth only to an https:// server (the
// password would cross the network readable by anyone on the path). InvalidArgument that names
// `conn.origin` and says what to change.
Status CheckCredentials(const ConnectionConfig& conn);

}  // namespace tessera::kube
