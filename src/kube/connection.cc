#include "kube/connection.h"

#include <sys/stat.h>

#include "common/strings.h"
#include "kube/kubeconfig.h"

namespace tessera::kube {

namespace {

bool FileExists(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Lookup(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

}  // namespace

Result<ConnectionConfig> InClusterConnection(const Environment& env,
                                             const std::string& service_account_dir) {
  std::string host = Lookup(env, "KUBERNETES_SERVICE_HOST");
  std::string port = Lookup(env, "KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return FailedPrecondition(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not "
        "set");
  }
  ConnectionConfig conn;
  // An IPv6 service address needs brackets in a URL.
  bool ipv6 = host.find(':') != std::string::npos;
  conn.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  conn.token_file = service_account_dir + "/token";
  if (!FileExists(conn.token_file)) {
    return NotFound("in-cluster service account token " + conn.token_file + " does not exist");
  }
  std::string ca = service_account_dir + "/ca.crt";
  if (FileExists(ca)) conn.ca_file = ca;
  conn.origin = "in-cluster service account " + service_account_dir;
  return conn;
}

Result<ConnectionConfig> ResolveConnection(const std::string& kubeconfig_setting,
                                           const Environment& env,
                                           const std::string& service_account_dir,
                                           const ConnectionOverrides& overrides) {
  if (kubeconfig_setting.find('\n') != std::string::npos) {
    return ParseKubeconfig(kubeconfig_setting, "", "kubeconfig from kube.kubeconfig", overrides);
  }
  if (!kubeconfig_setting.empty()) return LoadKubeconfigFile(kubeconfig_setting, overrides);

  std::string listed = Lookup(env, "KUBECONFIG");
  if (!listed.empty()) {
    Result<ConnectionConfig> merged = LoadKubeconfigFiles(Split(listed, ':'), overrides);
    if (merged.ok() || merged.status().code() != StatusCode::kNotFound) return merged;
    return NotFound("none of the files in KUBECONFIG=" + listed + " exists");
  }
  std::string home = Lookup(env, "HOME");
  std::string home_config = home.empty() ? "" : home + "/.kube/config";
  if (FileExists(home_config)) return LoadKubeconfigFile(home_config, overrides);
  for (auto [flag, name] :
       {std::pair{"context", &overrides.context}, std::pair{"cluster", &overrides.cluster},
        std::pair{"user", &overrides.user}}) {
    if (name->empty()) continue;
    return NotFound(std::string(flag) + " \"" + *name +
                    "\" was asked for, but no kubeconfig was found "
                    "(--kubeconfig, $KUBECONFIG, ~/.kube/config)");
  }

  if (!overrides.server.empty()) {
    ConnectionConfig conn{.origin = "--server " + overrides.server};
    RETURN_IF_ERROR(ApplyOverrides(overrides, conn));
    return conn;
  }
  Result<ConnectionConfig> in_cluster = InClusterConnection(env, service_account_dir);
  if (!in_cluster.ok() && in_cluster.status().code() == StatusCode::kFailedPrecondition) {
    return NotFound(
        "no API server connection: set --kubeconfig (kube.kubeconfig), $KUBECONFIG, create "
        "~/.kube/config, give --server, or run in a pod (KUBERNETES_SERVICE_HOST)");
  }
  if (!in_cluster.ok()) return in_cluster;
  RETURN_IF_ERROR(ApplyOverrides(overrides, *in_cluster).WithContext(in_cluster->origin));
  return in_cluster;
}

}  // namespace tessera::kube
