#include "config/value.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/strings.h"

namespace tessera::config {
namespace {

Status Bad(std::string_view text, const char* why) {
  return InvalidArgument("\"" + std::string(text) + "\": " + why);
}

}  // namespace

const char* TypeName(Type type) {
  switch (type) {
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "integer";
    case Type::kFloat:
      return "float";
    case Type::kString:
      return "string";
    case Type::kDuration:
      return "duration";
    case Type::kBytes:
      return "bytes";
    case Type::kList:
      return "list";
  }
  return "?";
}

const char* TypeExpectation(Type type) {
  switch (type) {
    case Type::kBool:
      return "a boolean (true or false)";
    case Type::kInt:
      return "a whole number";
    case Type::kFloat:
      return "a number";
    case Type::kString:
      return "a string";
    case Type::kDuration:
      return "a duration such as 500ms, 30s, 5m or 1h30m";
    case Type::kBytes:
      return "a byte quantity such as 16Gi, 256Mi, 4096Mi or plain bytes";
    case Type::kList:
      return "a comma-separated list";
  }
  return "?";
}

Result<bool> ParseBool(std::string_view text) {
  std::string t = ToLower(Trim(text));
  if (t == "true" || t == "yes" || t == "on" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "0") return false;
  return Bad(text, "not a boolean");
}

Result<int64_t> ParseInt(std::string_view text) {
  std::string t(Trim(text));
  if (t.empty()) return Bad(text, "empty");
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0') return Bad(text, "not a whole number");
  if (errno == ERANGE) return Bad(text, "out of range");
  return static_cast<int64_t>(v);
}

Result<double> ParseFloat(std::string_view text) {
  std::string t(Trim(text));
  if (t.empty()) return Bad(text, "empty");
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v)) return Bad(text, "not a number");
  return v;
}

Result<Duration> ParseDuration(std::string_view text) {
  std::string_view t = Trim(text);
  if (t == "0") return Duration::zero();
  if (t.empty()) return Bad(text, "empty");
  struct Unit {
    std::string_view name;
    int64_t ns;
  };
  // Longer names first so "ms" is not read as "m".
  static constexpr Unit kUnits[] = {{"ns", 1},
                                    {"us", 1000},
                                    {"ms", 1000000},
                                    {"s", 1000000000},
                                    {"m", 60LL * 1000000000},
                                    {"h", 3600LL * 1000000000}};
  double total = 0;
  while (!t.empty()) {
    size_t n = 0;
    while (n < t.size() && (std::isdigit(static_cast<unsigned char>(t[n])) || t[n] == '.')) ++n;
    if (n == 0) return Bad(text, "expected a number before each unit");
    double number = std::strtod(std::string(t.substr(0, n)).c_str(), nullptr);
    t.remove_prefix(n);
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (t.substr(0, u.name.size()) == u.name) {
        unit = &u;
        break;
      }
    }
    if (!unit) return Bad(text, "missing or unknown unit (use ns, us, ms, s, m or h)");
    t.remove_prefix(unit->name.size());
    total += number * static_cast<double>(unit->ns);
  }
  if (total > static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return Bad(text, "too long");
  }
  return Duration(static_cast<int64_t>(total));
}

Result<Bytes> ParseBytes(std::string_view text) {
  std::string_view t = Trim(text);
  size_t n = 0;
  while (n < t.size() && std::isdigit(static_cast<unsigned char>(t[n]))) ++n;
  if (n == 0) return Bad(text, "expected a whole number of bytes, optionally with a unit");
  std::string_view suffix = t.substr(n);
  if (suffix.size() == 3 && suffix.back() == 'B' && suffix[1] == 'i') suffix.remove_suffix(1);
  struct Unit {
    std::string_view name;
    uint64_t factor;
  };
  static constexpr Unit kUnits[] = {{"", 1},
                                    {"B", 1},
                                    {"Ki", 1ULL << 10},
                                    {"Mi", 1ULL << 20},
                                    {"Gi", 1ULL << 30},
                                    {"Ti", 1ULL << 40},
                                    {"k", 1000ULL},
                                    {"K", 1000ULL},
                                    {"M", 1000000ULL},
                                    {"G", 1000000000ULL},
                                    {"T", 1000000000000ULL}};
  for (const Unit& u : kUnits) {
    if (suffix != u.name) continue;
    errno = 0;
    unsigned long long number = std::strtoull(std::string(t.substr(0, n)).c_str(), nullptr, 10);
    if (errno == ERANGE || number > std::numeric_limits<uint64_t>::max() / u.factor) {
      return Bad(text, "too large");
    }
    return Bytes{number * u.factor};
  }
  return Bad(text, "unknown unit (use Ki, Mi, Gi, Ti, k, M, G, T or none)");
}

std::vector<std::string> ParseList(std::string_view text) {
  std::vector<std::string> out;
  for (const std::string& part : Split(text, ',')) {
    std::string_view item = Trim(part);
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

Result<Value> ParseValue(Type type, std::string_view text) {
  switch (type) {
    case Type::kBool: {
      ASSIGN_OR_RETURN(bool v, ParseBool(text));
      return Value(v);
    }
    case Type::kInt: {
      ASSIGN_OR_RETURN(int64_t v, ParseInt(text));
      return Value(v);
    }
    case Type::kFloat: {
      ASSIGN_OR_RETURN(double v, ParseFloat(text));
      return Value(v);
    }
    case Type::kString:
      return Value(std::string(text));
    case Type::kDuration: {
      ASSIGN_OR_RETURN(Duration v, ParseDuration(text));
      return Value(v);
    }
    case Type::kBytes: {
      ASSIGN_OR_RETURN(Bytes v, ParseBytes(text));
      return Value(v);
    }
    case Type::kList:
      return Value(ParseList(text));
  }
  return Internal("unknown type");
}

std::string FormatDuration(Duration d) {
  int64_t ns = d.count();
  if (ns == 0) return "0s";
  std::string out;
  if (ns % 1000000000 != 0) {
    if (ns % 1000000 == 0) return std::to_string(ns / 1000000) + "ms";
    if (ns % 1000 == 0) return std::to_string(ns / 1000) + "us";
    return std::to_string(ns) + "ns";
  }
  int64_t s = ns / 1000000000;
  if (s >= 3600) out += std::to_string(s / 3600) + "h", s %= 3600;
  if (s >= 60) out += std::to_string(s / 60) + "m", s %= 60;
  if (s > 0) out += std::to_string(s) + "s";
  return out;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"Ti", "Gi", "Mi", "Ki"};
  for (int i = 0; i < 4; ++i) {
    uint64_t factor = 1ULL << (10 * (4 - i));
    if (bytes != 0 && bytes % factor == 0) return std::to_string(bytes / factor) + kUnits[i];
  }
  return std::to_string(bytes);
}

std::string FormatValue(const Value& value) {
  struct Visitor {
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const {
      std::string s = std::to_string(v);
      while (s.size() > 1 && s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
      return s;
    }
    std::string operator()(const std::string& v) const { return v; }
    std::string operator()(Duration v) const { return FormatDuration(v); }
    std::string operator()(Bytes v) const { return FormatBytes(v.value); }
    std::string operator()(const std::vector<std::string>& v) const {
      std::string s;
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
      return s;
    }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace tessera::config
