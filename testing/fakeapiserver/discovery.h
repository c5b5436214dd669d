// Discovery documents of the fake API server, built from the resource table: what kubectl and
// client libraries read to learn which types exist and how to call them. Stateless: thread-safe.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace tessera::testing {

// Discovery documents: /api (APIVersions), /apis (APIGroupList), /api/v1 and
// /apis/<group>/<version> (APIResourceList; null when the group/version is not served),
// /apis/<group> (APIGroup; null when not served), /version.
nlohmann::json CoreApiVersions();
nlohmann::json ApiGroupList();
nlohmann::json ApiGroup(std::string_view group);
nlohmann::json ApiResourceList(std::string_view group, std::string_view version);
nlohmann::json VersionInfo();

// OpenAPI v3: the root index (/openapi/v3) and one group/version's document
// (/openapi/v3/api/v1, /openapi/v3/apis/<group>/<version>; null when not served). They describe
// only the operations and their query parameters (fieldValidation among them), no schemas:
// enough for kubectl to see that the server validates fields itself.
nlohmann::json OpenApiV3Root();
nlohmann::json OpenApiV3Document(std::string_view group, std::string_view version);

}  // namespace tessera::testing
