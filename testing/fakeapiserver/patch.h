// Applies the PATCH bodies the API server accepts to a JSON object.
//
//   application/merge-patch+json            RFC 7386
//   application/strategic-merge-patch+json  treated as a merge patch (what Tessera's objects need:
//                                           metadata and status maps; no list merge keys)
//   application/json-patch+json             RFC 6902
// Stateless functions: thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fakeapiserver/api_error.h"

namespace tessera::testing {

// Returns `target` with `patch_body` applied. 415 for another content type, 400 for a body that
// is not valid JSON of the right shape, 422 when a JSON patch operation cannot be applied.
ApiResult<nlohmann::json> ApplyPatch(const std::string& content_type, const std::string& patch_body,
                                     const nlohmann::json& target, const std::string& kind,
                                     const std::string& name);

}  // namespace tessera::testing
