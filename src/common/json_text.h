// Reading a field of a JSON object that comes from outside (the API server, kubelet, a
// user's spec), where an odd field must not end the process. Header-only; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tessera {

// The string `key` of `object`; "" when `object` is not an object, or the field is absent or not
// a string.
inline std::string TextOf(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The field `key` of `object`; nullptr when `object` is not an object, or the field is absent or
// null.
inline const nlohmann::json* Member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace tessera
