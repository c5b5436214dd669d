// ConnectionConfig: where the API server is and how to authenticate to it, and the rules that find
// it (kubeconfig or in-cluster service account).
//
// ResolveConnection() applies the precedence, first match wins:
//   1. the config key kube.kubeconfig (flag --kubeconfig, env TESSERA_KUBE_KUBECONFIG or
//      TESSERA_KUBE_KUBECONFIG_BASE64): a value that contains a newline is the kubeconfig itself,
//      otherwise it is a path;
//   2. $KUBECONFIG (a ':'-separated list: the first file that exists is used; files are not
//   merged);
//   3. ~/.kube/config when it exists;
//   4. in-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT with the service
//      account's token (re-read about every minute, it rotates) and ca.crt.
// Plain values: thread-compatible.
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace tessera::kube {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct ConnectionConfig {
  std::string server;  // "https://10.0.0.1:6443" (no trailing slash)
  bool insecure_skip_tls_verify = false;
  // PEM material, each either as a file path or in memory (the kubeconfig's "-data" fields).
  std::string ca_file, ca_pem;
  std::string client_cert_file, client_cert_pem;
  std::string client_key_file, client_key_pem;
  // Bearer token: given, or read from a file (re-read about every minute).
  std::string token, token_file;
  // Where this came from, for logs and errors: "kubeconfig /root/.kube/config context kind-x".
  std::string origin;
};

using Environment = std::map<std::string, std::string>;

// Applies the precedence above. `kubeconfig_setting` is the value of kube.kubeconfig; `env` the
// process environment (HOME, KUBECONFIG, KUBERNETES_SERVICE_*); `service_account_dir` where the
// in-cluster token and ca.crt live. NotFound when no rule applies, naming all four places.
Result<ConnectionConfig> ResolveConnection(
    const std::string& kubeconfig_setting, const Environment& env,
    const std::string& service_account_dir = kServiceAccountDir);

// The in-cluster connection: FailedPrecondition when KUBERNETES_SERVICE_HOST/PORT are not set,
// NotFound when the token file is missing.
Result<ConnectionConfig> InClusterConnection(const Environment& env,
                                             const std::string& service_account_dir);

}  // namespace tessera::kube
