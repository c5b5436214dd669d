// Kubeconfig parsing: turns a kubeconfig's context into a ConnectionConfig, as kubectl does.
//
// Reads current-context (or the context asked for, kubectl's --context) -> contexts[].context.
// {cluster,user} (or the entries --cluster and --user name) -> clusters[].cluster.{server,
// certificate-authority, certificate-authority-data, insecure-skip-tls-verify, tls-server-name,
// proxy-url, extensions} and users[].user.{token, tokenFile, client-certificate,
// client-certificate-data, client-key, client-key-data, username, password, as, as-uid, as-groups,
// as-user-extra, exec, auth-provider}, then lays kubectl's flags over them
// (kube/connection_overrides.h has the precedence). Relative file paths (and an exec command with
// a '/') are taken relative to the folder of the file that holds them, as kubectl does. An exec
// credential plugin (client.authentication.k8s.io v1 or v1beta1) becomes ConnectionConfig::exec,
// run by the Client (kube/exec_credential.h); the oidc auth-provider becomes
// ConnectionConfig::oidc (kube/oidc_token.h); gcp, azure and other providers are errors with
// kubectl's messages. A token or basic auth wins over exec and auth-provider, as in kubectl.
// Pure functions (they read files): thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kube/connection_config.h"
#include "kube/connection_overrides.h"

namespace tessera::kube {

// Parses kubeconfig text. `base_dir` anchors relative paths ("" = the working directory);
// `origin` names the source in errors ("kubeconfig /root/.kube/config"); `overrides` are
// kubectl's flags (--context instead of current-context, --cluster, --user, --server, ...).
// InvalidArgument for YAML errors, a missing context, references to absent clusters/users (a name
// a flag gives: the error lists the names there are), or a flag's bad value.
Result<ConnectionConfig> ParseKubeconfig(std::string_view content, const std::string& base_dir,
                                         const std::string& origin,
                                         const ConnectionOverrides& overrides = {});

// Reads and parses the kubeconfig file at `path`.
Result<ConnectionConfig> LoadKubeconfigFile(const std::string& path,
                                            const ConnectionOverrides& overrides = {});

// Merges the files of a KUBECONFIG list as kubectl does: files that do not exist are skipped; a
// cluster, context or user is taken from the first file that defines its name (whole, not field
// by field); current-context from the first file that sets it. NotFound when none of `paths`
// exists.
Result<ConnectionConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                             const ConnectionOverrides& overrides = {});

}  // namespace tessera::kube
