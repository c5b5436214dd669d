// Kubeconfig parsing: turns a kubeconfig file's current context into a ConnectionConfig.
//
// Reads current-context -> contexts[].context.{cluster,user} -> clusters[].cluster.{server,
// certificate-authority, certificate-authority-data, insecure-skip-tls-verify} and users[].user.
// {token, tokenFile, client-certificate, client-certificate-data, client-key, client-key-data}.
// Relative file paths are taken relative to the kubeconfig's folder, as kubectl does. Credential
// plugins (exec, auth-provider) and basic auth are not supported: a user with only those is an
// error that says so. Pure functions: thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "kube/connection_config.h"

namespace tessera::kube {

// Parses kubeconfig text. `base_dir` anchors relative paths ("" = the working directory);
// `origin` names the source in errors ("kubeconfig /root/.kube/config"). InvalidArgument for
// YAML errors, a missing current context, or references to absent clusters/users.
Result<ConnectionConfig> ParseKubeconfig(std::string_view content, const std::string& base_dir,
                                         const std::string& origin);

// Reads and parses the kubeconfig file at `path`.
Result<ConnectionConfig> LoadKubeconfigFile(const std::string& path);

}  // namespace tessera::kube
