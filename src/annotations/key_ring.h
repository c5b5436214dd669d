// KeyRing: the shared keys that sign Tessera's annotations (HMAC-SHA256), from a key file.
//
// The key file holds one key per line in base64 (as `openssl rand -base64 32` writes it), each at
// least 32 bytes decoded; blank lines and lines starting with # are ignored. The first key signs
// and every key verifies, so a new key is rolled in second, then moved first once every part has
// it, and the old one removed last.
//
// A signature reads "v1.<key id>.<HMAC>": the key id is the first 8 hex digits of the key's
// SHA-256, the HMAC (base64url without padding) is over "<annotation name>\n<object uid>\n<value>",
// so a signed value is worth nothing on another object or under another annotation.
//
// A plain value; const methods are thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera::annotations {

class KeyRing {
 public:
  // The keys in `text`, the contents of `file` (which the errors name, with the line).
  static Result<KeyRing> Parse(std::string_view text, const std::string& file);
  static Result<KeyRing> Load(const std::string& file);

  const std::string& signing_key_id() const { return keys_.front().id; }
  std::vector<std::string> key_ids() const;

  std::string Sign(std::string_view name, std::string_view uid, std::string_view value) const;
  // OK when `signature` is one of these keys' over the same name, uid and value; otherwise
  // PermissionDenied saying why in words that follow "the <annotation> of <object> ": the
  // signature is malformed, of a key id the ring does not hold, or does not match.
  Status Verify(std::string_view name, std::string_view uid, std::string_view value,
                std::string_view signature) const;

 private:
  struct Key {
    std::string id;
    std::string secret;
  };
  explicit KeyRing(std::vector<Key> keys) : keys_(std::move(keys)) {}

  std::vector<Key> keys_;  // never empty
};

}  // namespace tessera::annotations
