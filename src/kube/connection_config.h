// ConnectionConfig: where the API server is and how to authenticate to it, whichever way it was
// found (kube/connection.h: the rules; kube/kubeconfig.h: a kubeconfig's current context).
// A plain value: thread-compatible.
#pragma once

#include <optional>
#include <string>

#include "kube/exec_credential.h"

namespace tessera::kube {

struct ConnectionConfig {
  std::string server;  // "https://10.0.0.1:6443" (no trailing slash)
  bool insecure_skip_tls_verify = false;
  // PEM material, each either as a file path or in memory (the kubeconfig's "-data" fields).
  std::string ca_file, ca_pem;
  std::string client_cert_file, client_cert_pem;
  std::string client_key_file, client_key_pem;
  // Bearer token: given, or read from a file (re-read about every minute).
  std::string token, token_file;
  // An exec credential plugin (kube/exec_credential.h), run by the Client for its token or client
  // certificate.
  std::optional<ExecConfig> exec;
  // Where this came from, for logs and errors: "kubeconfig /root/.kube/config context kind-x".
  std::string origin;
};

}  // namespace tessera::kube
