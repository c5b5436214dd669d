#include "fakeapiserver/object_validation.h"

#include <cctype>

namespace tessera::testing {

using nlohmann::json;

namespace {

std::string Str(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

}  // namespace

bool ValidObjectName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  auto alnum = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c));
  };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  for (char c : name) {
    if (!alnum(c) && c != '-' && c != '.') return false;
  }
  return true;
}

ApiResult<json> DecodeObject(const std::string& body, const ResourceType& type,
                             const RequestPath& path) {
  json object = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) {
    return BadRequest(
        "couldn't get version/kind; json parse error: the request body is not "
        "valid JSON");
  }
  if (!object.is_object()) {
    return BadRequest(
        "couldn't get version/kind; json parse error: the request body must be a "
        "JSON object");
  }
  if (!object.contains("metadata")) object["metadata"] = json::object();
  if (!object["metadata"].is_object()) return BadRequest("metadata must be a JSON object");
  json& meta = object["metadata"];
  std::string name = Str(meta, "name");
  std::string api_version = Str(object, "apiVersion");
  if (!api_version.empty() && api_version != type.ApiVersion()) {
    return BadRequest("the API version in the data (" + api_version +
                      ") does not match the expected API version (" + type.ApiVersion() + ")");
  }
  std::string kind = Str(object, "kind");
  if (!kind.empty() && kind != type.kind) {
    return InvalidError(type.kind, name, "kind", "FieldValueInvalid",
                        "Invalid value: \"" + kind + "\": must be " + type.kind);
  }
  std::string ns = Str(meta, "namespace");
  if (type.namespaced && !ns.empty() && ns != path.ns) {
    return BadRequest(
        "the namespace of the provided object does not match the namespace sent "
        "on the request");
  }
  if (!path.name.empty()) {
    if (name.empty()) {
      meta["name"] = path.name;
      name = path.name;
    } else if (name != path.name) {
      return BadRequest("the name of the object (" + name +
                        ") does not match the name on the URL (" + path.name + ")");
    }
  }
  if (name.empty() && Str(meta, "generateName").empty()) {
    return InvalidError(type.kind, name, "metadata.name", "FieldValueRequired",
                        "Required value: name or generateName is required");
  }
  if (!name.empty() && !ValidObjectName(name)) {
    return InvalidError(type.kind, name, "metadata.name", "FieldValueInvalid",
                        "Invalid value: \"" + name +
                            "\": a lowercase RFC 1123 subdomain must consist of lower case "
                            "alphanumeric characters, '-' or '.', and must start and end with an "
                            "alphanumeric character");
  }
  return object;
}

}  // namespace tessera::testing
