#include "fakeapiserver/discovery.h"

#include <set>
#include <string>

#include "fakeapiserver/resource_types.h"

namespace tessera::testing {

using nlohmann::json;

json CoreApiVersions() {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs",
           {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1:6443"}}}}};
}

namespace {

json GroupJson(const std::string& group, const std::string& version) {
  json gv = {{"groupVersion", group + "/" + version}, {"version", version}};
  return {{"name", group}, {"versions", {gv}}, {"preferredVersion", gv}};
}

std::set<std::string> NamedGroups() {
  std::set<std::string> groups;
  for (const ResourceType& t : ResourceTypes()) {
    if (!t.group.empty()) groups.insert(t.group);
  }
  return groups;
}

}  // namespace

json ApiGroupList() {
  json groups = json::array();
  for (const std::string& g : NamedGroups()) groups.push_back(GroupJson(g, "v1"));
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

json ApiGroup(std::string_view group) {
  if (!NamedGroups().contains(std::string(group))) return nullptr;
  json g = GroupJson(std::string(group), "v1");
  g["kind"] = "APIGroup";
  g["apiVersion"] = "v1";
  return g;
}

json ApiResourceList(std::string_view group, std::string_view version) {
  json resources = json::array();
  std::string group_version;
  for (const ResourceType& t : ResourceTypes()) {
    if (t.group != group || t.version != version) continue;
    group_version = t.ApiVersion();
    json verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    json r = {{"name", t.plural},
              {"singularName", t.singular},
              {"namespaced", t.namespaced},
              {"kind", t.kind},
              {"verbs", verbs}};
    if (!t.short_names.empty()) r["shortNames"] = t.short_names;
    if (t.plural == "pods") r["categories"] = {"all"};
    resources.push_back(r);
    if (t.has_status) {
      resources.push_back({{"name", t.plural + "/status"},
                           {"singularName", ""},
                           {"namespaced", t.namespaced},
                           {"kind", t.kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
    if (t.plural == "pods") {
      resources.push_back({{"name", "pods/binding"},
                           {"singularName", ""},
                           {"namespaced", true},
                           {"kind", "Binding"},
                           {"verbs", {"create"}}});
    }
  }
  if (group_version.empty()) return nullptr;
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", group_version},
          {"resources", resources}};
}

json VersionInfo() {
  return {{"major", "1"},
          {"minor", "32"},
          {"gitVersion", "v1.32.0-tessera-fake"},
          {"gitCommit", "0000000000000000000000000000000000000000"},
          {"gitTreeState", "clean"},
          {"buildDate", "2026-01-01T00:00:00Z"},
          {"goVersion", "go1.23"},
          {"compiler", "gc"},
          {"platform", "linux/amd64"}};
}

namespace {

std::string GroupVersionPath(const ResourceType& t) {
  return t.group.empty() ? "api/" + t.version : "apis/" + t.group + "/" + t.version;
}

json Operation(const ResourceType& t, const std::string& action) {
  json params = json::array();
  for (const char* name : {"fieldValidation", "fieldManager", "dryRun", "pretty"}) {
    params.push_back({{"name", name}, {"in", "query"}, {"schema", {{"type", "string"}}}});
  }
  return {{"x-kubernetes-action", action},
          {"x-kubernetes-group-version-kind",
           {{"group", t.group}, {"version", t.version}, {"kind", t.kind}}},
          {"parameters", params},
          {"responses", {{"200", {{"description", "OK"}}}}}};
}

}  // namespace

json OpenApiV3Root() {
  json paths = json::object();
  for (const ResourceType& t : ResourceTypes()) {
    std::string gv = GroupVersionPath(t);
    paths[gv] = {{"serverRelativeURL", "/openapi/v3/" + gv + "?hash=fake"}};
  }
  return {{"paths", paths}};
}

json OpenApiV3Document(std::string_view group, std::string_view version) {
  json paths = json::object();
  for (const ResourceType& t : ResourceTypes()) {
    if (t.group != group || t.version != version) continue;
    std::string base = "/" + GroupVersionPath(t) + "/";
    std::string collection = base + (t.namespaced ? "namespaces/{namespace}/" : "") + t.plural;
    paths[collection] = {{"post", Operation(t, "post")}, {"get", Operation(t, "list")}};
    paths[collection + "/{name}"] = {{"get", Operation(t, "get")},
                                     {"put", Operation(t, "put")},
                                     {"patch", Operation(t, "patch")},
                                     {"delete", Operation(t, "delete")}};
  }
  if (paths.empty()) return nullptr;
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes (Tessera fake API server)"}, {"version", "v1.32.0"}}},
          {"paths", paths}};
}

}  // namespace tessera::testing
