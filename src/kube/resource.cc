#include "kube/resource.h"

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
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
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
