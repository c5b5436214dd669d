// The rules that find the API server and how to authenticate to it (a ConnectionConfig,
// kube/connection_config.h): kubeconfig or in-cluster service account.
// ResolveConnection() applies the precedence, first match wins:
//   1. the config key kube.kubeconfig (flag --kubeconfig, env TESSERA_KUBE_KUBECONFIG or
//      TESSERA_KUBE_KUBECONFIG_BASE64): a value with a newline is the kubeconfig, else a path;
//   2. $KUBECONFIG (':'-separated files, merged as kubectl merges them: kube/kubeconfig.h);
//   3. ~/.kube/config when it exists;
//   4. without a kubeconfig, --server (ConnectionOverrides::server) alone is the cluster;
//   5. in-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT with the service
//      account's token (re-read about every minute, it rotates) and ca.crt.
// kubectl's flags (kube/connection_overrides.h) are laid over whichever applies.
// Plain values: thread-compatible. What a kubeconfig may hold: docs/kube-client.md, "Connecting".
//
//   ASSIGN_OR_RETURN(ConnectionConfig connection,
//                    ResolveConnection(config.GetString("kube.kubeconfig"), env));
#pragma once

#include <map>
#include <string>

#include "common/status.h"
#include "kube/connection_config.h"
#include "kube/connection_overrides.h"

namespace tessera::kube {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

using Environment = std::map<std::string, std::string>;

// Applies the precedence above. `kubeconfig_setting` is the value of kube.kubeconfig; `env` the
// process environment (HOME, KUBECONFIG, KUBERNETES_SERVICE_*); `service_account_dir` where the
// in-cluster token and ca.crt live; `overrides` kubectl's flags (a --context, --cluster or --user
// with no kubeconfig found is an error). NotFound when no rule applies, naming the places.
Result<ConnectionConfig> ResolveConnection(
    const std::string& kubeconfig_setting, const Environment& env,
    const std::string& service_account_dir = kServiceAccountDir,
    const ConnectionOverrides& overrides = {});

// The in-cluster connection: FailedPrecondition when KUBERNETES_SERVICE_HOST/PORT are not set,
// NotFound when the token file is missing.
Result<ConnectionConfig> InClusterConnection(const Environment& env,
                                             const std::string& service_account_dir);

}  // namespace tessera::kube
