// RequestPath: what an API URL path names (a discovery document, a collection, an object or a
// subresource), parsed against the served resource types.
//
//   /api/v1/namespaces/default/pods/p1/status -> kObject, pods, ns "default", "p1", "status"
//   /apis/coordination.k8s.io/v1/leases       -> kCollection, leases, all namespaces
// Plain values: thread-compatible.
#pragma once

#include <string>
#include <string_view>

#include "fakeapiserver/resource_types.h"

namespace tessera::testing {

struct RequestPath {
  enum class Target {
    kUnknown,       // not an API path: 404
    kCoreVersions,  // /api
    kGroupList,     // /apis
    kGroup,         // /apis/<group>
    kResourceList,  // /api/v1, /apis/<group>/<version>
    kCollection,    // .../<resource> or .../namespaces/<ns>/<resource>
    kObject,        // .../<resource>/<name>[/<subresource>]
  };
  Target target = Target::kUnknown;
  std::string group;
  std::string version;
  const ResourceType* type = nullptr;
  std::string ns;  // empty: cluster-scoped, or all namespaces for a collection
  std::string name;
  std::string subresource;  // "", "status", "binding"

  static RequestPath Parse(std::string_view path);
};

}  // namespace tessera::testing
