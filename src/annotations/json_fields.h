// The reading rules every JSON annotation of the protocol shares (docs/annotations.md): a JSON
// object with "version": 1, fields of a fixed type, unknown fields ignored, errors that name the
// field and where it is. Internal to the protocol library; pure functions.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::annotations::internal {

// `text` as a JSON object whose "version" is 1; errors begin with `what` (the annotation).
Result<nlohmann::json> ParseVersionedObject(std::string_view text, const char* what);

// Reads `object[key]` into `out` when present and not null (left as it is otherwise, or an error
// naming `where` and the field when `required`); a value of another type is an error.
template <typename T>
Status Field(const nlohmann::json& object, const char* key, const std::string& where, T& out,
             bool required) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return required ? InvalidArgument(where + ": field \"" + key + "\" is missing") : Status::Ok();
  }
  bool ok;
  if constexpr (std::is_same_v<T, std::string>) {
    ok = it->is_string();
  } else if constexpr (std::is_same_v<T, bool>) {
    ok = it->is_boolean();
  } else if constexpr (std::is_floating_point_v<T>) {
    ok = it->is_number();
  } else if constexpr (std::is_unsigned_v<T>) {
    ok = it->is_number_unsigned();
  } else {
    ok = it->is_number_integer();
  }
  if (!ok) return InvalidArgument(where + ": field \"" + key + "\" has the wrong type");
  out = it->get<T>();
  return Status::Ok();
}

}  // namespace tessera::annotations::internal
