#include "fakeapiserver/request_path.h"

#include <vector>

#include "common/strings.h"

namespace tessera::testing {

namespace {

// Fills type/ns/name/subresource from the segments after the group/version prefix.
RequestPath ParseResource(RequestPath p, const std::vector<std::string>& s) {
  auto type_of = [&](const std::string& plural) {
    return FindResourceType(p.group, p.version, plural);
  };
  size_t i = 0;
  if (s.size() >= 3 && s[0] == "namespaces" && type_of(s[2]) != nullptr &&
      type_of(s[2])->namespaced) {
    p.ns = s[1];
    i = 2;
  }
  const size_t rest = s.size() - i;
  if (rest == 0 || rest > 3) return RequestPath{};
  p.type = type_of(s[i]);
  if (p.type == nullptr) return RequestPath{};
  // A namespaced type addressed without a namespace is only a collection (all namespaces).
  if (p.type->namespaced && p.ns.empty() && rest > 1) return RequestPath{};
  p.target = rest == 1 ? RequestPath::Target::kCollection : RequestPath::Target::kObject;
  if (rest >= 2) p.name = s[i + 1];
  if (rest == 3) {
    p.subresource = s[i + 2];
    bool known = (p.subresource == "status" && p.type->has_status) ||
                 (p.subresource == "binding" && p.type->plural == "pods");
    if (!known) return RequestPath{};
  }
  return p;
}

}  // namespace

RequestPath RequestPath::Parse(std::string_view path) {
  std::vector<std::string> s = Split(path, '/');
  RequestPath p;
  if (s.empty()) return p;
  if (s[0] == "api") {
    if (s.size() == 1) return {.target = Target::kCoreVersions};
    if (s[1] != "v1") return p;
    p.version = "v1";
    if (s.size() == 2) {
      p.target = Target::kResourceList;
      return p;
    }
    return ParseResource(p, std::vector<std::string>(s.begin() + 2, s.end()));
  }
  if (s[0] == "apis") {
    if (s.size() == 1) return {.target = Target::kGroupList};
    p.group = s[1];
    if (s.size() == 2) {
      p.target = Target::kGroup;
      return p;
    }
    p.version = s[2];
    if (s.size() == 3) {
      p.target = Target::kResourceList;
      return p;
    }
    return ParseResource(p, std::vector<std::string>(s.begin() + 3, s.end()));
  }
  return p;
}

}  // namespace tessera::testing
