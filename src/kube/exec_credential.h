// Exec credential plugins, as kubectl runs them (client.authentication.k8s.io v1 and v1beta1):
// a kubeconfig user's `exec` names a program (aws eks get-token, gke-gcloud-auth-plugin,
// kubelogin, ...) that prints an ExecCredential whose status holds a bearer token or a client
// certificate and key, valid until its expirationTimestamp.
//
// The program gets the process's environment plus the configured `env`, and KUBERNETES_EXEC_INFO:
// {"apiVersion","kind":"ExecCredential","spec":{"interactive":bool,"cluster":{...}}} (the cluster
// only with provideClusterInfo). Its stderr is the user's; its stdin too when it runs
// interactively (interactiveMode IfAvailable and stdin is a terminal, or Always). The protocol in
// full: docs/kube-client.md, "Exec credential plugins".
//
//   ExecCredentialSource source(config);
//   ASSIGN_OR_RETURN(ExecCredential cred, source.Current());  // runs the plugin when due
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::kube {

inline constexpr char kExecApiV1[] = "client.authentication.k8s.io/v1";
inline constexpr char kExecApiV1Beta1[] = "client.authentication.k8s.io/v1beta1";

// A kubeconfig user's `exec`, with what provideClusterInfo passes about the cluster.
struct ExecConfig {
  std::string api_version;  // kExecApiV1 or kExecApiV1Beta1
  std::string command;      // a name looked up on PATH, or a path
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string interactive_mode = "IfAvailable";  // Never, IfAvailable, Always
  std::string install_hint;
  bool provide_cluster_info = false;
  // spec.cluster of KUBERNETES_EXEC_INFO: server, certificate-authority-data, ... (only with
  // provide_cluster_info).
  nlohmann::json cluster = nlohmann::json::object();
  std::string origin;  // "kubeconfig /root/.kube/config user eks-admin", for errors
};

// What a plugin returned: a token, or a client certificate and key (PEM), or both.
struct ExecCredential {
  std::string token;
  std::string client_cert_pem, client_key_pem;
  std::optional<std::chrono::system_clock::time_point> expires;  // none: valid for good
};

// Parses a plugin's stdout. InvalidArgument when it is not an ExecCredential of `api_version`, has
// no status, neither a token nor a certificate and key, only one of the two, or an
// expirationTimestamp that is not RFC 3339.
Result<ExecCredential> ParseExecCredential(const std::string& output,
                                           const std::string& api_version);

// Runs the plugin once and parses what it printed. Errors: NotFound when the command does not
// exist (with its installHint), FailedPrecondition when it must run interactively but stdin is
// not a terminal, Unavailable when it exits non-zero, InvalidArgument for a malformed answer.
// Every message names the command and config.origin.
Result<ExecCredential> RunExecPlugin(const ExecConfig& config, bool stdin_is_terminal);

// Runs the plugin when there is no credential yet or the last one has expired, and keeps the
// answer until then. Thread-safe: one caller runs the plugin, the others wait for its answer.
class ExecCredentialSource {
 public:
  explicit ExecCredentialSource(ExecConfig config);

  Result<ExecCredential> Current();
  // The server refused `token` (401 Unauthorized): a cached credential with that token is dropped,
  // so that the next Current runs the plugin again even before its expiry, as kubectl does (the
  // credential may have been revoked). True when it was dropped.
  bool Forget(const std::string& token);
  // Testing hook: the credential as of `now`.
  Result<ExecCredential> CurrentAt(std::chrono::system_clock::time_point now);

 private:
  const ExecConfig config_;

  std::mutex mutex_;
  std::optional<ExecCredential> cached_;  // guarded by mutex_
};

}  // namespace tessera::kube
