// The resource types the fake API server serves.
//
// One table lists each type once (plural name, Kind, group/version, scope, short names, which
// fields a field selector may use, whether it has a /status subresource); routing, validation and
// discovery (discovery.h) all read it. Immutable: thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::testing {

struct ResourceType {
  std::string plural;    // "pods"
  std::string singular;  // "pod"
  std::string kind;      // "Pod"
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  bool namespaced = true;
  bool has_status = false;  // a /status subresource whose updates touch only `status`
  std::vector<std::string> short_names;
  std::vector<std::string> field_labels;  // besides metadata.name and metadata.namespace

  // "v1" or "coordination.k8s.io/v1".
  std::string ApiVersion() const;
};

// Every served type.
const std::vector<ResourceType>& ResourceTypes();

// The type served at `group`/`version` under `plural`, or nullptr.
const ResourceType* FindResourceType(std::string_view group, std::string_view version,
                                     std::string_view plural);

}  // namespace tessera::testing
