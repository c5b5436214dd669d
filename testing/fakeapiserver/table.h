// meta.k8s.io/v1 Table rendering, for clients (kubectl get) that ask for
// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.
//
// Pods and nodes get kubectl's usual columns (NAME READY STATUS RESTARTS AGE, and NAME STATUS
// ROLES AGE VERSION, plus the wide ones at priority 1); other types get NAME and AGE. Stateless:
// thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fakeapiserver/object_store.h"
#include "fakeapiserver/resource_types.h"

namespace tessera::testing {

// True when an Accept header asks for a meta.k8s.io/v1 Table.
bool WantsTable(std::string_view accept);

// A Table of `objects`. `include_object` is the includeObject parameter: "Object" embeds each
// object in its row, "None" nothing, anything else PartialObjectMetadata.
nlohmann::json RenderTable(const ResourceType& type, const std::vector<ObjectPtr>& objects,
                           const std::string& resource_version, const std::string& include_object);

// kubectl's short age format: "42s", "5m3s", "3h", "2d".
std::string HumanAge(int64_t seconds);

}  // namespace tessera::testing
