// Small string helpers shared by the C++ parts (not by the in-container library).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

std::vector<std::string> Split(std::string_view text, char sep, bool skip_empty = true);
// The items with `sep` between them: Join({"a", "b"}, ",") is "a,b".
std::string Join(const std::vector<std::string>& items, std::string_view sep);
std::string_view Trim(std::string_view text);
std::string ToLower(std::string_view text);
std::string ToUpper(std::string_view text);
bool StartsWith(std::string_view text, std::string_view prefix);
bool EndsWith(std::string_view text, std::string_view suffix);

// Edit distance, for "did you mean" suggestions.
size_t EditDistance(std::string_view a, std::string_view b);
// The candidate closest to `word`, if it is close enough to be a plausible typo.
std::optional<std::string> ClosestMatch(std::string_view word,
                                        const std::vector<std::string>& candidates);

// FNV-1a (64 bits): a hash that stays the same across runs, builds and machines, for names made
// from content (object names that must not change).
uint64_t Fnv1a(std::string_view text);

// A Prometheus label value, escaped: backslash, double quote and newline.
std::string PrometheusLabelValue(std::string_view value);

// Percent-encoding: every byte but ASCII letters, digits and the characters of `keep` as %XX
// (upper-case hex). PercentEncode("a b/c", "-._~") is "a%20b%2Fc".
std::string PercentEncode(std::string_view text, std::string_view keep);

// Standard base64 (RFC 4648) with padding; decoding ignores whitespace and rejects anything else.
std::string Base64Encode(std::string_view data);
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace tessera
