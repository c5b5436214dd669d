// Finding parts of a JSON text without building a document: the text of an object's member, or
// of each element of an array. For large files of which little is needed (kubelet's device
// checkpoint lists every device of the node; only its entries matter, and most of them are the
// same as at the last read). The slices point into the given text.
//
// Pure functions; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::node {

// The value of member `key` of the object `object` (leading and trailing spaces allowed), or
// nullopt when `object` is no well-formed object or has no such member. Keys are compared as
// written (no escapes resolved).
std::optional<std::string_view> JsonMember(std::string_view object, std::string_view key);

// The members of the object `object` as (key as written, value) pairs, or nullopt when it is no
// well-formed object.
std::optional<std::vector<std::pair<std::string_view, std::string_view>>> JsonMembers(
    std::string_view object);

// The text of the JSON string `value` (escapes resolved), or nullopt when it is no string.
std::optional<std::string> JsonString(std::string_view value);

// The elements of the array `array`, or nullopt when it is no well-formed array.
std::optional<std::vector<std::string_view>> JsonElements(std::string_view array);

// `text` without leading and trailing JSON whitespace.
std::string_view JsonTrim(std::string_view text);

}  // namespace tessera::node
