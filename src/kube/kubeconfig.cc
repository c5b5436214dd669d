#include "kube/kubeconfig.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>

#include "common/strings.h"

namespace tessera::kube {

namespace {

using json = nlohmann::json;

// An entry of clusters[], contexts[] or users[], with the file it came from.
struct Named {
  YAML::Node node;       // the entry's cluster/context/user map
  std::string base_dir;  // anchors its relative paths
  std::string origin;    // "kubeconfig /root/.kube/config"
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

// Adds the entries of one file that `merged` does not have yet.
Status MergeFile(const YAML::Node& root, const std::string& base_dir, const std::string& origin,
                 Merged& merged) {
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
      into->emplace(name, Named{entry[field], base_dir, origin});
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

Result<ConnectionConfig> Resolve(const Merged& merged, const std::string& context_override,
                                 const std::string& origin) {
  std::string context_name = context_override.empty() ? merged.current_context : context_override;
  if (context_name.empty()) {
    return InvalidArgument(origin +
                           ": current-context is not set (kubectl config use-context NAME, or "
                           "--context NAME)");
  }
  auto context = merged.contexts.find(context_name);
  if (context == merged.contexts.end() || !context->second.node.IsMap()) {
    std::vector<std::string> names;
    for (const auto& [name, entry] : merged.contexts) names.push_back(name);
    return InvalidArgument(origin + ": " +
                           (context_override.empty() ? "current-context \"" : "context \"") +
                           context_name + "\" is not among contexts[]" +
                           (names.empty() ? "" : " (" + Join(names, ", ") + ")"));
  }
  std::string cluster_name = Scalar(context->second.node, "cluster");
  std::string user_name = Scalar(context->second.node, "user");
  auto cluster = merged.clusters.find(cluster_name);
  if (cluster == merged.clusters.end() || !cluster->second.node.IsMap()) {
    return InvalidArgument(context->second.origin + ": context \"" + context_name +
                           "\" names cluster \"" + cluster_name +
                           "\", which is not among clusters[]");
  }
  const Named& c = cluster->second;

  ConnectionConfig conn;
  conn.origin = context->second.origin + " context " + context_name;
  conn.server = Scalar(c.node, "server");
  while (EndsWith(conn.server, "/")) conn.server.pop_back();
  if (conn.server.empty()) {
    return InvalidArgument(c.origin + ": cluster \"" + cluster_name + "\" has no server");
  }
  if (!StartsWith(conn.server, "https://") && !StartsWith(conn.server, "http://")) {
    return InvalidArgument(c.origin + ": cluster \"" + cluster_name + "\" server \"" + conn.server +
                           "\" must start with https:// or http://");
  }
  conn.insecure_skip_tls_verify = ToLower(Scalar(c.node, "insecure-skip-tls-verify")) == "true";
  std::string where = c.origin + " cluster " + cluster_name;
  RETURN_IF_ERROR(Material(c, "certificate-authority", where, conn.ca_file, conn.ca_pem));

  if (user_name.empty()) return conn;  // anonymous
  auto user_entry = merged.users.find(user_name);
  if (user_entry == merged.users.end()) {
    return InvalidArgument(context->second.origin + ": context \"" + context_name +
                           "\" names user \"" + user_name + "\", which is not among users[]");
  }
  const Named& user = user_entry->second;
  if (!user.node || !user.node.IsMap()) return conn;  // a user with no credentials: anonymous
  where = user.origin + " user " + user_name;
  conn.token = Scalar(user.node, "token");
  conn.token_file = Absolute(Scalar(user.node, "tokenFile"), user.base_dir);
  RETURN_IF_ERROR(
      Material(user, "client-certificate", where, conn.client_cert_file, conn.client_cert_pem));
  RETURN_IF_ERROR(Material(user, "client-key", where, conn.client_key_file, conn.client_key_pem));
  bool has_cert = !conn.client_cert_file.empty() || !conn.client_cert_pem.empty();
  bool has_key = !conn.client_key_file.empty() || !conn.client_key_pem.empty();
  if (has_cert != has_key) {
    return InvalidArgument(where + ": client-certificate and client-key must be given together");
  }
  bool has_token = !conn.token.empty() || !conn.token_file.empty();
  // A request that carries a token already is sent as it is (kubectl's exec round tripper).
  if (user.node["exec"] && !has_token) {
    ASSIGN_OR_RETURN(ExecConfig exec, ParseExec(user, c.node, conn, where));
    conn.exec = std::move(exec);
    return conn;
  }
  if (!has_cert && !has_token && (user.node["auth-provider"] || user.node["username"])) {
    return InvalidArgument(where +
                           ": auth-provider plugins and basic auth are not supported; use an exec "
                           "credential plugin, token, tokenFile or client-certificate/client-key");
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
    return MergeFile(YAML::Load(text.str()), FolderOf(path), origin, merged);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(origin + ": not valid YAML: " + e.what());
  }
}

}  // namespace

Result<ConnectionConfig> ParseKubeconfig(std::string_view content, const std::string& base_dir,
                                         const std::string& origin, const std::string& context) {
  Merged merged;
  try {
    RETURN_IF_ERROR(MergeFile(YAML::Load(std::string(content)), base_dir, origin, merged));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(origin + ": not valid YAML: " + e.what());
  }
  return Resolve(merged, context, origin);
}

Result<ConnectionConfig> LoadKubeconfigFile(const std::string& path, const std::string& context) {
  Merged merged;
  RETURN_IF_ERROR(MergePath(path, merged));
  return Resolve(merged, context, "kubeconfig " + path);
}

Result<ConnectionConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                             const std::string& context) {
  Merged merged;
  std::vector<std::string> read;
  for (const std::string& path : paths) {
    struct stat st;
    if (path.empty() || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    RETURN_IF_ERROR(MergePath(path, merged));
    read.push_back(path);
  }
  if (read.empty()) return NotFound("none of the kubeconfig files " + Join(paths, ":") + " exists");
  return Resolve(merged, context, "kubeconfig " + Join(read, ":"));
}

}  // namespace tessera::kube
