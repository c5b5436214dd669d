#include "fakeapiserver/object_validation.h"

#include <cctype>

namespace tessera::testing {

using nlohmann::json;

namespace {

std::string Str(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

// The start of a body as the real server quotes it in decode errors: a JSON object as text, other
// data in hex, cut after 30 bytes.
std::string Summary(const std::string& body) {
  constexpr size_t kMax = 30;
  if (body.empty()) return "<empty>";
  std::string head = body.substr(0, kMax);
  if (body.front() != '{') {
    static const char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char c : head) {
      hex += kHex[c >> 4];
      hex += kHex[c & 15];
    }
    head = std::move(hex);
  }
  return body.size() > kMax ? head + " ..." : head;
}

}  // namespace

ApiError UnrecognizedBody(const std::string& kind, const std::string& why,
                          const std::string& body) {
  return BadRequest("the object provided is unrecognized (must be of type " + kind +
                    "): couldn't get version/kind; json parse error: " + why + " (" +
                    Summary(body) + ")");
}

ApiError WrongKindError(const std::string& kind, const std::string& group,
                        const std::string& body_kind, const std::string& body_version) {
  std::string why;
  for (const ResourceType& known : ResourceTypes()) {
    if (known.kind == body_kind && known.ApiVersion() == body_version) {
      // Internal packages: "core" for the core group, else the group's first label.
      why = "converting (" + known.version + "." + body_kind + ") to (" +
            (group.empty() ? std::string("core") : group.substr(0, group.find('.'))) + "." + kind +
            "): unknown conversion";
    }
  }
  if (why.empty()) {
    why = "no kind \"" + body_kind + "\" is registered for version \"" + body_version + "\"";
  }
  return BadRequest(body_kind + " in version \"" + body_version + "\" cannot be handled as a " +
                    kind + ": " + why);
}

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
    return UnrecognizedBody(type.kind, "the request body is not valid JSON", body);
  }
  if (!object.is_object()) {
    return UnrecognizedBody(type.kind,
                            std::string("json: cannot unmarshal ") + object.type_name() +
                                " into an object with apiVersion and kind",
                            body);
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
    return WrongKindError(type.kind, type.group, kind,
                          api_version.empty() ? type.ApiVersion() : api_version);
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
