#include "kube/kubeconfig.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>

#include "common/strings.h"
#include "kube/connection_overrides.h"

namespace tessera::kube {

namespace {

using json = nlohmann::json;

// An entry of clusters[], contexts[] or users[], with the file it came from.
struct Named {
  YAML::Node node;       // the entry's cluster/context/user map
  std::string base_dir;  // anchors its relative paths
  std::string origin;    // "kubeconfig /root/.kube/config"
  std::string path;      // the file ("" for kubeconfig text): where refreshed tokens go
};

// One kubeconfig, or several merged (first definition wins).
struct Merged {
  std::string current_context;
  std::map<std::string, Named> clusters, contexts, users;
};

std::string Scalar(const YAML::Node& map, const char* key) {
  if (!map || !map.IsMap()) return "";
  YAML::Node value = map[key];
  return value && value.IsScalar() ? value.as<std::string>() : "";
}

std::string Absolute(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// YAML as JSON (scalars as strings), for the exec plugin's cluster config.
json ToJson(const YAML::Node& node) {
  if (node.IsMap()) {
    json out = json::object();
    for (const auto& kv : node) {
      if (kv.first.IsScalar()) out[kv.first.as<std::string>()] = ToJson(kv.second);
    }
    return out;
  }
  if (node.IsSequence()) {
    json out = json::array();
    for (const YAML::Node& item : node) out.push_back(ToJson(item));
    return out;
  }
  if (node.IsScalar()) return node.as<std::string>();
  return nullptr;
}

// Adds the entries of one file (`path`; "" for kubeconfig text) that `merged` does not have yet.
Status MergeFile(const YAML::Node& root, const std::string& path, const std::string& base_dir,
                 const std::string& origin, Merged& merged) {
  if (!root || root.IsNull()) return Status::Ok();  // an empty file
  if (!root.IsMap()) return InvalidArgument(origin + ": not a kubeconfig (expected a YAML map)");
  if (merged.current_context.empty()) merged.current_context = Scalar(root, "current-context");
  for (auto [list, field, into] : {std::tuple{"clusters", "cluster", &merged.clusters},
                                   std::tuple{"contexts", "context", &merged.contexts},
                                   std::tuple{"users", "user", &merged.users}}) {
    YAML::Node entries = root[list];
    if (!entries || !entries.IsSequence()) continue;
    for (const YAML::Node& entry : entries) {
      std::string name = Scalar(entry, "name");
      if (name.empty() || into->count(name)) continue;
      into->emplace(name, Named{entry[field], base_dir, origin, path});
    }
  }
  return Status::Ok();
}

// Decodes a "-data" field into `pem`, or resolves the file field into `file`.
Status Material(const Named& entry, const std::string& field, const std::string& where,
                std::string& file, std::string& pem) {
  std::string data = Scalar(entry.node, (field + "-data").c_str());
  if (!data.empty()) {
    std::optional<std::string> decoded = Base64Decode(data);
    if (!decoded) {
      return InvalidArgument(where + ": " + field + "-data is not valid base64");
    }
    pem = std::move(*decoded);
    return Status::Ok();
  }
  file = Absolute(Scalar(entry.node, field.c_str()), entry.base_dir);
  return Status::Ok();
}

// users[].user.exec as an ExecConfig; `conn` has the cluster's fields for provideClusterInfo.
Result<ExecConfig> ParseExec(const Named& user, const YAML::Node& cluster,
                             const ConnectionConfig& conn, const std::string& where) {
  const YAML::Node exec = user.node["exec"];
  ExecConfig config;
  config.origin = where;
  config.api_version = Scalar(exec, "apiVersion");
  if (config.api_version != kExecApiV1 && config.api_version != kExecApiV1Beta1) {
    return InvalidArgument(where + ": exec apiVersion \"" + config.api_version +
                           "\" is not supported; use " + kExecApiV1 + " or " + kExecApiV1Beta1);
  }
  config.command = Scalar(exec, "command");
  if (config.command.empty()) return InvalidArgument(where + ": exec has no command");
  if (config.command.find('/') != std::string::npos) {
    config.command = Absolute(config.command, user.base_dir);
  }
  if (exec["args"] && exec["args"].IsSequence()) {
    for (const YAML::Node& arg : exec["args"]) {
      if (!arg.IsScalar()) return InvalidArgument(where + ": exec args must be strings");
      config.args.push_back(arg.as<std::string>());
    }
  }
  if (exec["env"] && exec["env"].IsSequence()) {
    for (const YAML::Node& var : exec["env"]) {
      std::string name = Scalar(var, "name");
      if (name.empty()) return InvalidArgument(where + ": an exec env entry has no name");
      config.env.emplace_back(name, Scalar(var, "value"));
    }
  }
  std::string mode = Scalar(exec, "interactiveMode");
  if (mode.empty() && config.api_version == kExecApiV1) {
    return InvalidArgument(where + ": exec interactiveMode must be set for " + kExecApiV1 +
                           " (Never, IfAvailable or Always)");
  }
  if (!mode.empty()) {
    if (mode != "Never" && mode != "IfAvailable" && mode != "Always") {
      return InvalidArgument(where + ": exec interactiveMode \"" + mode +
                             "\" is not one of Never, IfAvailable, Always");
    }
    config.interactive_mode = mode;
  }
  config.install_hint = Scalar(exec, "installHint");
  config.provide_cluster_info = ToLower(Scalar(exec, "provideClusterInfo")) == "true";
  if (config.provide_cluster_info) {
    json& c = config.cluster;
    c["server"] = conn.server;
    std::string tls_server_name = Scalar(cluster, "tls-server-name");
    if (!tls_server_name.empty()) c["tls-server-name"] = tls_server_name;
    if (conn.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    std::string ca =
        conn.ca_pem.empty() && !conn.ca_file.empty() ? ReadAll(conn.ca_file) : conn.ca_pem;
    if (!ca.empty()) c["certificate-authority-data"] = Base64Encode(ca);
    std::string proxy = Scalar(cluster, "proxy-url");
    if (!proxy.empty()) c["proxy-url"] = proxy;
    if (cluster["extensions"] && cluster["extensions"].IsSequence()) {
      for (const YAML::Node& ext : cluster["extensions"]) {
        if (Scalar(ext, "name") == "client.authentication.k8s.io/exec" && ext["extension"]) {
          c["config"] = ToJson(ext["extension"]);
        }
      }
    }
  }
  return config;
}

// " (a, b)" for the names of `entries`, " (none)" without any: errors list what is there.
std::string NamesOf(const std::map<std::string, Named>& entries) {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries) names.push_back(name);
  return names.empty() ? " (none)" : " (" + Join(names, ", ") + ")";
}

// A list of strings (absent: empty), or InvalidArgument naming `field`.
Result<std::vector<std::string>> Strings(const YAML::Node& list, const std::string& field,
                                         const std::string& where) {
  std::vector<std::string> out;
  if (!list || list.IsNull()) return out;
  Status bad = InvalidArgument(where + ": " + field + " must be a list of strings");
  if (!list.IsSequence()) return bad;
  for (const YAML::Node& item : list) {
    if (!item.IsScalar()) return bad;
    out.push_back(item.as<std::string>());
  }
  return out;
}

// The user's impersonation fields: as, as-uid, as-groups, as-user-extra.
Status ReadImpersonation(const YAML::Node& user, const std::string& where, Impersonation& as) {
  as.user = Scalar(user, "as");
  as.uid = Scalar(user, "as-uid");
  ASSIGN_OR_RETURN(as.groups, Strings(user["as-groups"], "as-groups", where));
  YAML::Node extra = user["as-user-extra"];
  if (!extra || extra.IsNull()) return Status::Ok();
  if (!extra.IsMap()) {
    return InvalidArgument(where + ": as-user-extra must map keys to lists of strings");
  }
  for (const auto& kv : extra) {
    std::string key = kv.first.as<std::string>();
    ASSIGN_OR_RETURN(as.extra[key], Strings(kv.second, "as-user-extra " + key, where));
  }
  return Status::Ok();
}

// users[].user.auth-provider: client-go keeps only oidc (gcp and azure were removed in 1.26; their
// messages are client-go's).
Result<OidcConfig> ParseAuthProvider(const YAML::Node& provider, const std::string& where) {
  std::string name = Scalar(provider, "name");
  if (name == "gcp") {
    return InvalidArgument(where +
                           ": The gcp auth plugin has been removed. Please use the "
                           "\"gke-gcloud-auth-plugin\" kubectl/client-go credential plugin "
                           "instead. See https://cloud.google.com/blog/products/"
                           "containers-kubernetes/kubectl-auth-changes-in-gke for further details");
  }
  if (name == "azure") {
    return InvalidArgument(where +
                           ": The azure auth plugin has been removed. Please use the "
                           "https://github.com/Azure/kubelogin kubectl/client-go credential "
                           "plugin instead. See https://kubernetes.io/docs/reference/"
                           "access-authn-authz/authentication/#client-go-credential-plugins for "
                           "further details");
  }
  if (name != "oidc") {
    return InvalidArgument(where + ": no Auth Provider found for name \"" + name +
                           "\" (only oidc is supported, as in kubectl; use an exec credential "
                           "plugin)");
  }
  std::map<std::string, std::string> config;
  YAML::Node fields = provider["config"];
  if (fields && fields.IsMap()) {
    for (const auto& kv : fields) {
      if (kv.second.IsScalar()) config[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
  }
  return ParseOidcConfig(config, where);
}

// The cluster entry's server, verification and CA into `conn`. Without a server of its own it is
// usable only when --server gives one.
Status ReadCluster(const Named& c, const std::string& name, bool server_flag,
                   ConnectionConfig& conn) {
  conn.server = Scalar(c.node, "server");
  while (EndsWith(conn.server, "/")) conn.server.pop_back();
  if (conn.server.empty() && !server_flag) {
    return InvalidArgument(c.origin + ": cluster \"" + name + "\" has no server");
  }
  if (!conn.server.empty() && !StartsWith(conn.server, "https://") &&
      !StartsWith(conn.server, "http://")) {
    return InvalidArgument(c.origin + ": cluster \"" + name + "\" server \"" + conn.server +
                           "\" must start with https:// or http://");
  }
  conn.insecure_skip_tls_verify = ToLower(Scalar(c.node, "insecure-skip-tls-verify")) == "true";
  return Material(c, "certificate-authority", c.origin + " cluster " + name, conn.ca_file,
                  conn.ca_pem);
}

// The user entry's token, certificate, basic auth and impersonation into `conn`.
Status ReadUser(const Named& user, const std::string& where, ConnectionConfig& conn) {
  conn.token = Scalar(user.node, "token");
  conn.token_file = Absolute(Scalar(user.node, "tokenFile"), user.base_dir);
  conn.username = Scalar(user.node, "username");
  conn.password = Scalar(user.node, "password");
  RETURN_IF_ERROR(
      Material(user, "client-certificate", where, conn.client_cert_file, conn.client_cert_pem));
  RETURN_IF_ERROR(Material(user, "client-key", where, conn.client_key_file, conn.client_key_pem));
  bool has_cert = !conn.client_cert_file.empty() || !conn.client_cert_pem.empty();
  bool has_key = !conn.client_key_file.empty() || !conn.client_key_pem.empty();
  if (has_cert != has_key) {
    return InvalidArgument(where + ": client-certificate and client-key must be given together");
  }
  return ReadImpersonation(user.node, where, conn.impersonate);
}

// The user's exec plugin or auth-provider into `conn`, once the flags are laid over it: used only
// when no token or basic auth is sent (kubectl's exec and auth-provider round trippers leave a
// request that carries one as it is), but an auth-provider is checked even then (client-go builds
// it regardless).
Status ReadPlugins(const Named& user, const std::string& user_name, const YAML::Node& cluster,
                   const std::string& where, ConnectionConfig& conn) {
  if (user.node["exec"] && user.node["auth-provider"]) {
    return InvalidArgument(where +
                           ": authProvider cannot be provided in combination with an exec plugin");
  }
  std::optional<OidcConfig> oidc;
  if (user.node["auth-provider"]) {
    ASSIGN_OR_RETURN(oidc, ParseAuthProvider(user.node["auth-provider"], where));
    oidc->kubeconfig_path = user.path;
    oidc->user_name = user_name;
  }
  if (!conn.token.empty() || !conn.token_file.empty() || !conn.username.empty()) {
    return Status::Ok();
  }
  if (user.node["exec"]) {
    ASSIGN_OR_RETURN(ExecConfig exec, ParseExec(user, cluster, conn, where));
    conn.exec = std::move(exec);
  }
  conn.oidc = std::move(oidc);
  return Status::Ok();
}

// The context's (or the flags') cluster and user, with the overrides laid over them.
Result<ConnectionConfig> Resolve(const Merged& merged, const ConnectionOverrides& overrides,
                                 const std::string& origin) {
  const std::string context_name =
      overrides.context.empty() ? merged.current_context : overrides.context;
  // With --server or --cluster the flags name a cluster, so no context is needed (kubectl).
  if (context_name.empty() && overrides.server.empty() && overrides.cluster.empty()) {
    return InvalidArgument(origin +
                           ": current-context is not set (kubectl config use-context NAME, or "
                           "--context NAME)");
  }
  YAML::Node context_node;
  std::string context_origin = origin;
  if (!context_name.empty()) {
    auto context = merged.contexts.find(context_name);
    if (context == merged.contexts.end() || !context->second.node.IsMap()) {
      return InvalidArgument(origin + ": " +
                             (overrides.context.empty() ? "current-context \"" : "context \"") +
                             context_name + "\" is not among contexts[]" +
                             (merged.contexts.empty() ? "" : NamesOf(merged.contexts)));
    }
    context_node = context->second.node;
    context_origin = context->second.origin;
  }
  const std::string cluster_name =
      overrides.cluster.empty() ? Scalar(context_node, "cluster") : overrides.cluster;
  const std::string user_name =
      overrides.user.empty() ? Scalar(context_node, "user") : overrides.user;

  ConnectionConfig conn;
  conn.origin = context_name.empty() ? context_origin : context_origin + " context " + context_name;
  if (!overrides.cluster.empty()) conn.origin += " cluster " + cluster_name;
  if (!overrides.user.empty()) conn.origin += " user " + user_name;

  auto cluster = merged.clusters.find(cluster_name);
  const bool have_cluster = cluster != merged.clusters.end() && cluster->second.node.IsMap();
  if (!have_cluster && !overrides.cluster.empty()) {
    return InvalidArgument(origin + ": cluster \"" + cluster_name +
                           "\" (--cluster) is not among clusters[]" + NamesOf(merged.clusters));
  }
  if (!have_cluster && overrides.server.empty()) {
    return InvalidArgument(context_origin + ": context \"" + context_name + "\" names cluster \"" +
                           cluster_name + "\", which is not among clusters[]");
  }
  if (have_cluster) {
    RETURN_IF_ERROR(ReadCluster(cluster->second, cluster_name, !overrides.server.empty(), conn));
  }

  auto user = merged.users.find(user_name);
  if (!user_name.empty() && user == merged.users.end()) {
    if (!overrides.user.empty()) {
      return InvalidArgument(origin + ": user \"" + user_name + "\" (--user) is not among users[]" +
                             NamesOf(merged.users));
    }
    return InvalidArgument(context_origin + ": context \"" + context_name + "\" names user \"" +
                           user_name + "\", which is not among users[]");
  }
  // No user, or one with no credentials: anonymous, unless the flags give some.
  const bool have_user = !user_name.empty() && user->second.node.IsMap();
  const std::string where = have_user ? user->second.origin + " user " + user_name : "";
  if (have_user) RETURN_IF_ERROR(ReadUser(user->second, where, conn));
  RETURN_IF_ERROR(ApplyOverrides(overrides, conn).WithContext(conn.origin));
  if (have_user) {
    RETURN_IF_ERROR(ReadPlugins(user->second, user_name,
                                have_cluster ? cluster->second.node : YAML::Node(), where, conn));
  }
  return conn;
}

std::string FolderOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash == 0 ? 1 : slash);
}

Status MergePath(const std::string& path, Merged& merged) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus("reading kubeconfig", path, errno);
  std::stringstream text;
  text << in.rdbuf();
  std::string origin = "kubeconfig " + path;
  try {
    return MergeFile(YAML::Load(text.str()), path, FolderOf(path), origin, merged);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(origin + ": not valid YAML: " + e.what());
  }
}

}  // namespace

Result<ConnectionConfig> ParseKubeconfig(std::string_view content, const std::string& base_dir,
                                         const std::string& origin,
                                         const ConnectionOverrides& overrides) {
  Merged merged;
  try {
    RETURN_IF_ERROR(MergeFile(YAML::Load(std::string(content)), "", base_dir, origin, merged));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(origin + ": not valid YAML: " + e.what());
  }
  return Resolve(merged, overrides, origin);
}

Result<ConnectionConfig> LoadKubeconfigFile(const std::string& path,
                                            const ConnectionOverrides& overrides) {
  Merged merged;
  RETURN_IF_ERROR(MergePath(path, merged));
  return Resolve(merged, overrides, "kubeconfig " + path);
}

Result<ConnectionConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                             const ConnectionOverrides& overrides) {
  Merged merged;
  std::vector<std::string> read;
  for (const std::string& path : paths) {
    struct stat st;
    if (path.empty() || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    RETURN_IF_ERROR(MergePath(path, merged));
    read.push_back(path);
  }
  if (read.empty()) return NotFound("none of the kubeconfig files " + Join(paths, ":") + " exists");
  return Resolve(merged, overrides, "kubeconfig " + Join(read, ":"));
}

}  // namespace tessera::kube
