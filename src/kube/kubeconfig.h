// Kubeconfig parsing: turns a kubeconfig's context into a ConnectionConfig, as kubectl does.
//
// Reads current-context (or the context asked for, kubectl's --context) -> contexts[].context.
// {cluster,user} -> clusters[].cluster.{server, certificate-authority, certificate-authority-data,
// insecure-skip-tls-verify, tls-server-name, proxy-url, extensions} and users[].user.{token,
// tokenFile, client-certificate, client-certificate-data, client-key, client-key-data, exec}.
// Relative file paths (and an exec command with a '/') are taken relative to the folder of the
// file that holds them, as kubectl does. An exec credential plugin (client.authentication.k8s.io
// v1 or v1beta1) becomes ConnectionConfig::exec, run by the Client (kube/exec_credential.h).
// auth-provider plugins and basic auth are not supported: a user with only those is an error that
// says so. Pure functions (they read files): thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kube/connection_config.h"

namespace tessera::kube {

// Parses kubeconfig text. `base_dir` anchors relative paths ("" = the working directory);
// `origin` names the source in errors ("kubeconfig /root/.kube/config"); `context` (non-empty)
// is used instead of current-context. InvalidArgument for YAML errors, a missing context, or
// references to absent clusters/users.
Result<ConnectionConfig> ParseKubeconfig(std::string_view content, const std::string& base_dir,
                                         const std::string& origin,
                                         const std::string& context = "");

// Reads and parses the kubeconfig file at `path`.
Result<ConnectionConfig> LoadKubeconfigFile(const std::string& path,
                                            const std::string& context = "");

// Merges the files of a KUBECONFIG list as kubectl does: files that do not exist are skipped; a
// cluster, context or user is taken from the first file that defines its name (whole, not field
// by field); current-context from the first file that sets it. NotFound when none of `paths`
// exists.
Result<ConnectionConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                             const std::string& context = "");

}  // namespace tessera::kube
