#include "annotations/key_ring.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/strings.h"

namespace tessera::annotations {
namespace {

constexpr size_t kMinKeyBytes = 32;
constexpr size_t kMaxFileBytes = 1 << 20;
constexpr char kVersion[] = "v1";
constexpr char kAllowed[] =
    "each line holds one key, the base64 of at least 32 random bytes (openssl rand -base64 32); "
    "blank lines and lines starting with # are ignored";

std::string Hex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 15];
  }
  return out;
}

std::string KeyId(std::string_view secret) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(secret.data(), secret.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    return "";
  }
  return Hex(digest, 4);
}

std::string Base64Url(std::string_view raw) {
  std::string out = Base64Encode(raw);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

// The base64url HMAC-SHA256 of the signed message, or "" if OpenSSL fails (then nothing matches).
std::string Mac(const std::string& secret, std::string_view name, std::string_view uid,
                std::string_view value) {
  std::string message;
  message.reserve(name.size() + uid.size() + value.size() + 2);
  message.append(name).append("\n").append(uid).append("\n").append(value);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &size)) {
    return "";
  }
  return Base64Url(std::string_view(reinterpret_cast<const char*>(mac), size));
}

bool IsKeyId(std::string_view s) {
  return s.size() == 8 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// For messages: a signature of any length and content, shortened and quoted.
std::string Quoted(std::string_view s) {
  constexpr size_t kShown = 64;
  std::string out = "\"";
  for (char c : s.substr(0, kShown)) out += c >= 0x20 && c < 0x7f ? c : '?';
  return out + (s.size() > kShown ? "...\"" : "\"");
}

}  // namespace

Result<KeyRing> KeyRing::Parse(std::string_view text, const std::string& file) {
  std::vector<Key> keys;
  std::vector<std::string> lines = Split(text, '\n', false);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = Trim(lines[i]);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = "annotation key file " + file + " line " + std::to_string(i + 1);
    std::optional<std::string> secret = Base64Decode(line);
    if (!secret) return InvalidArgument(where + ": not base64; " + kAllowed);
    if (secret->size() < kMinKeyBytes) {
      return InvalidArgument(where + ": the key is " + std::to_string(secret->size()) +
                             " bytes, shorter than 32; " + kAllowed);
    }
    std::string id = KeyId(*secret);
    keys.push_back({std::move(id), std::move(*secret)});
  }
  if (keys.empty())
    return InvalidArgument("annotation key file " + file + " holds no key; " + kAllowed);
  return KeyRing(std::move(keys));
}

Result<KeyRing> KeyRing::Load(const std::string& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot read the annotation key file", file, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > off_t{kMaxFileBytes}) {
    ::close(fd);
    return InvalidArgument("annotation key file " + file +
                           " is not a regular file of at most 1 MiB; " + kAllowed);
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  ssize_t n = ::read(fd, text.data(), text.size());
  int err = errno;
  ::close(fd);
  if (n < 0) return ErrnoStatus("cannot read the annotation key file", file, err);
  text.resize(static_cast<size_t>(n));
  return Parse(text, file);
}

std::vector<std::string> KeyRing::key_ids() const {
  std::vector<std::string> out;
  for (const Key& k : keys_) out.push_back(k.id);
  return out;
}

std::string KeyRing::Sign(std::string_view name, std::string_view uid,
                          std::string_view value) const {
  const Key& key = keys_.front();
  return std::string(kVersion) + "." + key.id + "." + Mac(key.secret, name, uid, value);
}

Status KeyRing::Verify(std::string_view name, std::string_view uid, std::string_view value,
                       std::string_view signature) const {
  std::vector<std::string> parts = Split(signature, '.', false);
  if (parts.size() != 3 || parts[0] != kVersion || !IsKeyId(parts[1]) || parts[2].empty()) {
    return Status(StatusCode::kPermissionDenied, "has a malformed signature " + Quoted(signature) +
                                                     " (expected v1.<key id>.<HMAC>)");
  }
  bool known = false;
  for (const Key& key : keys_) {
    if (key.id != parts[1]) continue;
    known = true;
    std::string expected = Mac(key.secret, name, uid, value);
    if (!expected.empty() && expected.size() == parts[2].size() &&
        CRYPTO_memcmp(expected.data(), parts[2].data(), expected.size()) == 0) {
      return Status::Ok();
    }
  }
  if (!known) {
    return Status(StatusCode::kPermissionDenied,
                  "does not verify: its signature is of key id " + parts[1] +
                      ", which the annotation key file does not hold (it holds " +
                      Join(key_ids(), ", ") + ")");
  }
  return Status(StatusCode::kPermissionDenied,
                "does not verify: its signature (key id " + parts[1] +
                    ") does not match; the value was changed, or signed for another object or "
                    "annotation");
}

}  // namespace tessera::annotations
