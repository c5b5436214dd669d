#include "common/quantity.h"

#include <cctype>
#include <optional>
#include <string>

#include "common/strings.h"

namespace tessera {
namespace {

constexpr int64_t kMaxCount = int64_t{1} << 53;
// Any factor above this makes a non-zero mantissa too large; keeps the arithmetic in range.
constexpr __int128 kFactorCap = static_cast<__int128>(kMaxCount) * 1000000000000000000LL;

// A suffix as the value it multiplies by: base^exponent.
struct Scale {
  int base = 10;
  int exponent = 0;
};

// The suffixes of the Kubernetes quantity grammar:
//   <suffix> ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI> ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI> ::= n | u | m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>   (an integer exponent)
// "E" alone is exa; "E" followed by a number is an exponent.
std::optional<Scale> ParseSuffix(std::string_view s) {
  static constexpr std::pair<std::string_view, Scale> kNamed[] = {
      {"", {10, 0}},   {"n", {10, -9}}, {"u", {10, -6}}, {"m", {10, -3}},
      {"k", {10, 3}},  {"M", {10, 6}},  {"G", {10, 9}},  {"T", {10, 12}},
      {"P", {10, 15}}, {"E", {10, 18}}, {"Ki", {2, 10}}, {"Mi", {2, 20}},
      {"Gi", {2, 30}}, {"Ti", {2, 40}}, {"Pi", {2, 50}}, {"Ei", {2, 60}},
  };
  for (const auto& [name, scale] : kNamed) {
    if (s == name) return scale;
  }
  if (s.size() < 2 || (s[0] != 'e' && s[0] != 'E')) return std::nullopt;
  std::string_view digits = s.substr(1);
  bool negative = digits[0] == '-';
  if (digits[0] == '+' || digits[0] == '-') digits = digits.substr(1);
  if (digits.empty() || digits.size() > 4 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  int exponent = std::stoi(std::string(digits));
  return Scale{10, negative ? -exponent : exponent};
}

Status NotWhole(std::string_view text, const char* why) {
  return InvalidArgument("\"" + std::string(text) + "\" " + why +
                         ": use a whole non-negative number such as 1 or 4096");
}

}  // namespace

Result<int64_t> ParseWholeQuantity(std::string_view raw) {
  std::string_view text = Trim(raw);
  if (text.empty()) return NotWhole(raw, "is empty");
  size_t i = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    i = 1;
  }
  // <number> ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
  const size_t number_start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) ||
                             (text[i] == '.' && text.find('.', number_start) == i))) {
    ++i;
  }
  std::string_view number = text.substr(number_start, i - number_start);
  size_t dot = number.find('.');
  std::string_view whole = number.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? "" : number.substr(dot + 1);
  if (whole.empty() && fraction.empty()) return NotWhole(raw, "is not a number");
  while (!whole.empty() && whole.front() == '0') whole.remove_prefix(1);
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  if (whole.size() + fraction.size() > 30) return NotWhole(raw, "has too many digits");
  __int128 mantissa = 0;
  for (char c : whole) mantissa = mantissa * 10 + (c - '0');
  for (char c : fraction) mantissa = mantissa * 10 + (c - '0');
  const int fraction_digits = static_cast<int>(fraction.size());
  std::optional<Scale> scale = ParseSuffix(text.substr(i));
  if (!scale) {
    return NotWhole(raw,
                    "has an unknown unit suffix (allowed: n u m k M G T P E, Ki Mi Gi Ti Pi Ei, "
                    "or an exponent such as e3)");
  }
  if (mantissa == 0) return 0;
  if (negative) return NotWhole(raw, "is negative");
  // value = mantissa * base^exponent / 10^fraction_digits, which must be whole.
  __int128 numerator = mantissa;
  __int128 denominator = 1;
  for (int d = 0; d < fraction_digits; ++d) denominator *= 10;
  for (int e = 0; e < std::abs(scale->exponent); ++e) {
    __int128& side = scale->exponent > 0 ? numerator : denominator;
    if (side > kFactorCap) {
      return NotWhole(raw, scale->exponent > 0 ? "is too large" : "is not a whole number");
    }
    side *= scale->base;
  }
  if (numerator % denominator != 0) return NotWhole(raw, "is not a whole number");
  __int128 value = numerator / denominator;
  if (value > kMaxCount) return NotWhole(raw, "is too large (at most 2^53)");
  return static_cast<int64_t>(value);
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
    if (d > static_cast<double>(kMaxCount)) return NotWhole(value.dump(), "is too large");
    if (d != static_cast<double>(static_cast<int64_t>(d))) {
      return NotWhole(value.dump(), "is not a whole number");
    }
    return static_cast<int64_t>(d);
  }
  return InvalidArgument("quantity " + value.dump() + " is not a string or a number");
}

}  // namespace tessera
