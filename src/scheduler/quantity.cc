#include "scheduler/quantity.h"

#include <cctype>
#include <string>

#include "common/strings.h"

namespace tessera::scheduler {
namespace {

constexpr int64_t kMaxCount = int64_t{1} << 53;

struct Suffix {
  std::string_view text;
  __int128 numerator;
  __int128 denominator;
};

constexpr __int128 kKi = 1024;
constexpr Suffix kSuffixes[] = {
    {"", 1, 1},
    {"m", 1, 1000},
    {"k", 1000, 1},
    {"M", 1000000, 1},
    {"G", 1000000000, 1},
    {"T", 1000000000000, 1},
    {"P", 1000000000000000, 1},
    {"Ki", kKi, 1},
    {"Mi", kKi* kKi, 1},
    {"Gi", kKi* kKi* kKi, 1},
    {"Ti", kKi* kKi* kKi* kKi, 1},
    {"Pi", kKi* kKi* kKi* kKi* kKi, 1},
};

Status NotWhole(std::string_view text, const char* why) {
  return InvalidArgument("\"" + std::string(text) + "\" " + why +
                         ": use a whole non-negative number such as 1 or 4096");
}

}  // namespace

Result<int64_t> ParseWholeQuantity(std::string_view raw) {
  std::string_view text = Trim(raw);
  if (text.empty()) return NotWhole(raw, "is empty");
  size_t i = 0;
  if (text[0] == '+') {
    i = 1;
  } else if (text[0] == '-') {
    return NotWhole(raw, "is negative");
  }
  __int128 mantissa = 0;
  int fraction_digits = 0;
  bool seen_dot = false;
  bool seen_digit = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      seen_digit = true;
      if (mantissa > kMaxCount * 1000) return NotWhole(raw, "is too large");
      mantissa = mantissa * 10 + (c - '0');
      if (seen_dot) ++fraction_digits;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  if (!seen_digit) return NotWhole(raw, "is not a number");
  std::string_view suffix = text.substr(i);
  for (const Suffix& s : kSuffixes) {
    if (s.text != suffix) continue;
    __int128 denominator = s.denominator;
    for (int d = 0; d < fraction_digits; ++d) denominator *= 10;
    __int128 numerator = mantissa * s.numerator;
    if (numerator % denominator != 0) return NotWhole(raw, "is not a whole number");
    __int128 value = numerator / denominator;
    if (value > kMaxCount) return NotWhole(raw, "is too large");
    return static_cast<int64_t>(value);
  }
  return NotWhole(raw, "has an unknown unit suffix (allowed: k M G T P Ki Mi Gi Ti Pi m)");
}

Result<int64_t> ParseWholeQuantity(const nlohmann::json& value) {
  if (value.is_string())
    return ParseWholeQuantity(std::string_view(value.get_ref<const std::string&>()));
  if (value.is_number_unsigned()) {
    uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(kMaxCount)) return NotWhole(value.dump(), "is too large");
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) return ParseWholeQuantity(std::string_view(value.dump()));
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (d < 0) return NotWhole(value.dump(), "is negative");
    if (d != static_cast<double>(static_cast<int64_t>(d)) || d > static_cast<double>(kMaxCount)) {
      return NotWhole(value.dump(), "is not a whole number");
    }
    return static_cast<int64_t>(d);
  }
  return InvalidArgument("quantity " + value.dump() + " is not a string or a number");
}

}  // namespace tessera::scheduler
