#include "kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace tessera::kube {

namespace {

// The entry named `name` in a kubeconfig list such as clusters[], or an undefined node.
YAML::Node FindNamed(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (const YAML::Node& entry : list) {
    if (entry.IsMap() && entry["name"] && entry["name"].as<std::string>() == name) return entry;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Scalar(const YAML::Node& map, const char* key) {
  if (!map || !map.IsMap()) return "";
  YAML::Node value = map[key];
  return value && value.IsScalar() ? value.as<std::string>() : "";
}

std::string Absolute(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

// Decodes a "-data" field into `pem`, or resolves the file field into `file`.
Status Material(const YAML::Node& map, const std::string& field, const std::string& base_dir,
                const std::string& where, std::string& file, std::string& pem) {
  std::string data = Scalar(map, (field + "-data").c_str());
  if (!data.empty()) {
    std::optional<std::string> decoded = Base64Decode(data);
    if (!decoded) {
      return InvalidArgument(where + ": " + field + "-data is not valid base64");
    }
    pem = std::move(*decoded);
    return Status::Ok();
  }
  file = Absolute(Scalar(map, field.c_str()), base_dir);
  return Status::Ok();
}

Result<ConnectionConfig> Parse(const YAML::Node& root, const std::string& base_dir,
                               const std::string& origin) {
  if (!root.IsMap()) return InvalidArgument(origin + ": not a kubeconfig (expected a YAML map)");
  std::string context_name = Scalar(root, "current-context");
  if (context_name.empty()) {
    return InvalidArgument(origin +
                           ": current-context is not set (kubectl config use-context NAME)");
  }
  YAML::Node context = FindNamed(root["contexts"], context_name);
  if (!context || !context["context"].IsMap()) {
    return InvalidArgument(origin + ": current-context \"" + context_name +
                           "\" is not among contexts[]");
  }
  std::string cluster_name = Scalar(context["context"], "cluster");
  std::string user_name = Scalar(context["context"], "user");
  YAML::Node cluster_entry = FindNamed(root["clusters"], cluster_name);
  if (!cluster_entry || !cluster_entry["cluster"].IsMap()) {
    return InvalidArgument(origin + ": context \"" + context_name + "\" names cluster \"" +
                           cluster_name + "\", which is not among clusters[]");
  }
  const YAML::Node cluster = cluster_entry["cluster"];

  ConnectionConfig conn;
  conn.origin = origin + " context " + context_name;
  conn.server = Scalar(cluster, "server");
  while (EndsWith(conn.server, "/")) conn.server.pop_back();
  if (conn.server.empty()) {
    return InvalidArgument(origin + ": cluster \"" + cluster_name + "\" has no server");
  }
  if (!StartsWith(conn.server, "https://") && !StartsWith(conn.server, "http://")) {
    return InvalidArgument(origin + ": cluster \"" + cluster_name + "\" server \"" + conn.server +
                           "\" must start with https:// or http://");
  }
  std::string insecure = ToLower(Scalar(cluster, "insecure-skip-tls-verify"));
  conn.insecure_skip_tls_verify = insecure == "true";
  std::string where = origin + " cluster " + cluster_name;
  RETURN_IF_ERROR(
      Material(cluster, "certificate-authority", base_dir, where, conn.ca_file, conn.ca_pem));

  if (user_name.empty()) return conn;  // anonymous
  YAML::Node user_entry = FindNamed(root["users"], user_name);
  if (!user_entry) {
    return InvalidArgument(origin + ": context \"" + context_name + "\" names user \"" + user_name +
                           "\", which is not among users[]");
  }
  const YAML::Node user = user_entry["user"];
  if (!user || !user.IsMap()) return conn;  // a user with no credentials: anonymous
  where = origin + " user " + user_name;
  conn.token = Scalar(user, "token");
  conn.token_file = Absolute(Scalar(user, "tokenFile"), base_dir);
  RETURN_IF_ERROR(Material(user, "client-certificate", base_dir, where, conn.client_cert_file,
                           conn.client_cert_pem));
  RETURN_IF_ERROR(
      Material(user, "client-key", base_dir, where, conn.client_key_file, conn.client_key_pem));
  bool has_cert = !conn.client_cert_file.empty() || !conn.client_cert_pem.empty();
  bool has_key = !conn.client_key_file.empty() || !conn.client_key_pem.empty();
  if (has_cert != has_key) {
    return InvalidArgument(where + ": client-certificate and client-key must be given together");
  }
  bool has_credential = has_cert || !conn.token.empty() || !conn.token_file.empty();
  if (!has_credential && (user["exec"] || user["auth-provider"] || user["username"])) {
    return InvalidArgument(where +
                           ": exec/auth-provider plugins and basic auth are not supported; use "
                           "token, tokenFile or client-certificate/client-key");
  }
  return conn;
}

}  // namespace

Result<ConnectionConfig> ParseKubeconfig(std::string_view content, const std::string& base_dir,
                                         const std::string& origin) {
  try {
    return Parse(YAML::Load(std::string(content)), base_dir, origin);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(origin + ": not valid YAML: " + e.what());
  }
}

Result<ConnectionConfig> LoadKubeconfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus("reading kubeconfig", path, errno);
  std::stringstream text;
  text << in.rdbuf();
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash == 0 ? 1 : slash);
  return ParseKubeconfig(text.str(), dir, "kubeconfig " + path);
}

}  // namespace tessera::kube
