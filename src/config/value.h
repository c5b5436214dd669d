// Typed configuration values and the parsers that turn text into them.
//
// Every source (file, environment, flag) hands the loader text, or a list of texts; the same
// parsers apply everywhere, so a value means the same thing wherever it comes from.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

namespace tessera::config {

enum class Type { kBool, kInt, kFloat, kString, kDuration, kBytes, kList };

// What a value of `type` looks like, for error messages ("a duration such as 30s or 5m").
const char* TypeExpectation(Type type);
const char* TypeName(Type type);

struct Bytes {
  uint64_t value = 0;
  bool operator==(const Bytes&) const = default;
};

using Duration = std::chrono::nanoseconds;
using Value =
    std::variant<bool, int64_t, double, std::string, Duration, Bytes, std::vector<std::string>>;

// Parsers: each returns InvalidArgument with a short description of what was wrong.
Result<bool> ParseBool(std::string_view text);    // true/false, yes/no, on/off, 1/0
Result<int64_t> ParseInt(std::string_view text);  // decimal, optional sign
Result<double> ParseFloat(std::string_view text);
Result<Duration> ParseDuration(std::string_view text);  // 30s, 5m, 1h30m, 250ms, 10us, 0
// Byte quantities: plain bytes, Kubernetes suffixes Ki Mi Gi Ti (powers of 1024) and k M G T
// (powers of 1000); KiB/MiB/GiB/TiB also accepted. Whole numbers only.
Result<Bytes> ParseBytes(std::string_view text);
std::vector<std::string> ParseList(std::string_view text);  // comma separated, trimmed

// Parses `text` as `type`.
Result<Value> ParseValue(Type type, std::string_view text);

// The canonical text of a value (durations as 1m30s, bytes in the largest exact binary unit).
std::string FormatValue(const Value& value);
std::string FormatDuration(Duration d);
std::string FormatBytes(uint64_t bytes);

}  // namespace tessera::config
