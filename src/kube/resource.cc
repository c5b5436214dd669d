#include "kube/resource.h"

#include "common/strings.h"

namespace tessera::kube {

std::string CollectionPath(const Resource& resource, std::string_view ns) {
  std::string path(resource.group_version_path);
  if (resource.namespaced && !ns.empty()) path += "/namespaces/" + UrlEncode(ns);
  path += "/";
  path += resource.plural;
  return path;
}

std::string ObjectPath(const Resource& resource, std::string_view ns, std::string_view name,
                       std::string_view subresource) {
  std::string path = CollectionPath(resource, ns) + "/" + UrlEncode(name);
  if (!subresource.empty()) path += "/" + std::string(subresource);
  return path;
}

std::string UrlEncode(std::string_view text) {
  return PercentEncode(text, "-._~");
}

std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [name, value] : params) {
    if (value.empty()) continue;
    out += out.empty() ? "?" : "&";
    out += name + "=" + UrlEncode(value);
  }
  return out;
}

}  // namespace tessera::kube
