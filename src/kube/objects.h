// Small readers and builders for the API objects Tessera handles, kept as nlohmann::json.
//
// Readers never throw: a missing or mistyped field reads as "" (or an empty map). Pure functions:
// thread-safe.
//
//   std::string key = ObjectKey(pod);            // "default/p1" ("n1" for a node)
//   std::string node = NodeNameOf(pod);          // spec.nodeName
//   std::string a = Annotation(pod, "tessera.io/allocation");
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tessera::kube {

using Json = nlohmann::json;

// A string field at a JSON pointer ("/metadata/name"), or "".
std::string StringAt(const Json& object, const char* pointer);

std::string NameOf(const Json& object);
std::string NamespaceOf(const Json& object);
std::string UidOf(const Json& object);
std::string ResourceVersionOf(const Json& object);
// "namespace/name", or "name" for cluster-scoped objects: the informer's cache key.
std::string ObjectKey(const Json& object);
std::string NodeNameOf(const Json& pod);  // spec.nodeName
std::string PhaseOf(const Json& pod);     // status.phase

std::string Annotation(const Json& object, std::string_view key);
std::map<std::string, std::string> Annotations(const Json& object);
std::map<std::string, std::string> Labels(const Json& object);

// Changes for a merge patch of a string map: a value sets the key, nullopt removes it.
using StringMapChanges = std::map<std::string, std::optional<std::string>>;

// {"metadata":{"<field>":{...changes, null for removal...}}}, plus metadata.resourceVersion when
// `resource_version` is set (the server then answers 409 Conflict if the object changed).
Json MetadataMapPatch(const char* field, const StringMapChanges& changes,
                      const std::string& resource_version);

// The current time in RFC 3339 UTC: "2026-11-29T19:40:00Z" for Time fields, or with microseconds
// "2026-11-29T19:40:00.123456Z" for MicroTime fields (Lease renewTime, acquireTime).
std::string Rfc3339Now(bool microseconds);

}  // namespace tessera::kube
