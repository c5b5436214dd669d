// Decoding and checking of the objects clients send (create and replace bodies), with the real
// server's answers for what is wrong: 400 for a body that is not a JSON object or names another
// apiVersion, kind, namespace or name than the URL; 422 for a missing or malformed name.
// Stateless: thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fakeapiserver/api_error.h"
#include "fakeapiserver/request_path.h"
#include "fakeapiserver/resource_types.h"

namespace tessera::testing {

// Parses `body` as an object of `type` sent to `path`. When `path` names an object (replace), a
// body without a name takes the URL's. Returns the object with `metadata` present.
ApiResult<nlohmann::json> DecodeObject(const std::string& body, const ResourceType& type,
                                       const RequestPath& path);

// 400 for a body that is not a JSON object, quoting its start as the real server does.
ApiError UnrecognizedBody(const std::string& kind, const std::string& why, const std::string& body);
// 400 for an object of `body_kind` sent where `kind` of `group` ("" = core) belongs: the real
// server decodes it as its own kind, then cannot convert it.
ApiError WrongKindError(const std::string& kind, const std::string& group,
                        const std::string& body_kind, const std::string& body_version);

// An RFC 1123 subdomain: lower-case alphanumerics, '-' and '.', alphanumeric at both ends, at most
// 253 characters.
bool ValidObjectName(const std::string& name);

}  // namespace tessera::testing
