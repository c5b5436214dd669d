#include "node/kubelet/json_slices.h"

#include <cstddef>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::node {

namespace {

constexpr size_t kBad = std::string_view::npos;

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t SkipSpace(std::string_view t, size_t i) {
  while (i < t.size() && IsSpace(t[i])) ++i;
  return i;
}

// The position after the string starting at t[i] == '"', or kBad. Quotes are found with memchr
// (the checkpoint is mostly long base64 strings): a quote ends the string unless an odd number
// of backslashes stands right before it.
size_t SkipString(std::string_view t, size_t i) {
  const char* body = t.data() + i + 1;
  const char* end = t.data() + t.size();
  for (const char* p = body; p < end;) {
    const char* q = static_cast<const char*>(std::memchr(p, '"', static_cast<size_t>(end - p)));
    if (q == nullptr) return kBad;
    size_t backslashes = 0;
    while (q - backslashes > body && q[-1 - static_cast<ptrdiff_t>(backslashes)] == '\\') {
      ++backslashes;
    }
    if (backslashes % 2 == 0) return static_cast<size_t>(q - t.data()) + 1;
    p = q + 1;
  }
  return kBad;
}

// The position after the value starting at t[i], or kBad. Containers are matched bracket by
// bracket (strings skipped); scalars run to the next delimiter.
size_t SkipValue(std::string_view t, size_t i) {
  if (i >= t.size()) return kBad;
  if (t[i] == '"') return SkipString(t, i);
  if (t[i] != '{' && t[i] != '[') {
    size_t j = i;
    while (j < t.size() && !IsSpace(t[j]) && t[j] != ',' && t[j] != '}' && t[j] != ']') ++j;
    return j > i ? j : kBad;
  }
  char open[64];  // the closing brackets still awaited; kubelet's JSON is a few levels deep
  size_t depth = 0;
  for (; i < t.size(); ++i) {
    char c = t[i];
    if (c == '"') {
      i = SkipString(t, i);
      if (i == kBad) return kBad;
      --i;
    } else if (c == '{' || c == '[') {
      if (depth == sizeof(open)) return kBad;
      open[depth++] = c == '{' ? '}' : ']';
    } else if (c == '}' || c == ']') {
      if (depth == 0 || open[depth - 1] != c) return kBad;
      if (--depth == 0) return i + 1;
    }
  }
  return kBad;
}

}  // namespace

std::string_view JsonTrim(std::string_view text) {
  size_t b = SkipSpace(text, 0);
  size_t e = text.size();
  while (e > b && IsSpace(text[e - 1])) --e;
  return text.substr(b, e - b);
}

std::optional<std::vector<std::pair<std::string_view, std::string_view>>> JsonMembers(
    std::string_view object) {
  std::string_view t = JsonTrim(object);
  if (t.empty() || t.front() != '{' || t.back() != '}') return std::nullopt;
  std::vector<std::pair<std::string_view, std::string_view>> out;
  size_t i = SkipSpace(t, 1);
  if (i < t.size() && t[i] == '}') return i + 1 == t.size() ? std::optional(out) : std::nullopt;
  while (i < t.size()) {
    if (t[i] != '"') return std::nullopt;
    size_t key_end = SkipString(t, i);
    if (key_end == kBad) return std::nullopt;
    std::string_view name = t.substr(i + 1, key_end - i - 2);
    i = SkipSpace(t, key_end);
    if (i >= t.size() || t[i] != ':') return std::nullopt;
    i = SkipSpace(t, i + 1);
    size_t value_end = SkipValue(t, i);
    if (value_end == kBad) return std::nullopt;
    out.emplace_back(name, t.substr(i, value_end - i));
    i = SkipSpace(t, value_end);
    if (i >= t.size()) return std::nullopt;
    if (t[i] == '}') return i + 1 == t.size() ? std::optional(out) : std::nullopt;
    if (t[i] != ',') return std::nullopt;
    i = SkipSpace(t, i + 1);
  }
  return std::nullopt;
}

std::optional<std::string_view> JsonMember(std::string_view object, std::string_view key) {
  auto members = JsonMembers(object);
  if (!members) return std::nullopt;
  for (const auto& [name, value] : *members) {
    if (name == key) return value;
  }
  return std::nullopt;
}

std::optional<std::string> JsonString(std::string_view value) {
  std::string_view t = JsonTrim(value);
  if (t.size() < 2 || t.front() != '"' || SkipString(t, 0) != t.size()) return std::nullopt;
  std::string_view inner = t.substr(1, t.size() - 2);
  if (inner.find('\\') == std::string_view::npos) return std::string(inner);
  nlohmann::json parsed = nlohmann::json::parse(t, nullptr, false);
  if (!parsed.is_string()) return std::nullopt;
  return parsed.get<std::string>();
}

std::optional<std::vector<std::string_view>> JsonElements(std::string_view array) {
  std::string_view t = JsonTrim(array);
  if (t.empty() || t.front() != '[' || t.back() != ']') return std::nullopt;
  std::vector<std::string_view> out;
  size_t i = SkipSpace(t, 1);
  if (i < t.size() && t[i] == ']') return out;
  while (i < t.size()) {
    size_t end = SkipValue(t, i);
    if (end == kBad) return std::nullopt;
    out.push_back(t.substr(i, end - i));
    i = SkipSpace(t, end);
    if (i >= t.size()) return std::nullopt;
    if (t[i] == ']') return i + 1 == t.size() ? std::optional(out) : std::nullopt;
    if (t[i] != ',') return std::nullopt;
    i = SkipSpace(t, i + 1);
  }
  return std::nullopt;
}

}  // namespace tessera::node
