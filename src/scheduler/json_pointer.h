// JSON Pointer (RFC 6901) tokens for the webhooks' JSONPatch paths. Pure: thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace tessera::scheduler {

// `name` as one token of a JSON Pointer: "~" written "~0" and "/" written "~1"
// ("nvidia.com/gpu" -> "nvidia.com~1gpu").
inline std::string PointerToken(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace tessera::scheduler
