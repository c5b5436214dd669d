// Leveled logging to stderr, as text or JSON lines, with timestamps.
//
//   log::Info("bound pod", {{"pod", "default/p1"}, {"node", "n1"}});
//   -> 2026-11-29T19:40:00.123Z INFO bound pod pod=default/p1 node=n1
//   -> {"ts":"2026-11-29T19:40:00.123Z","level":"info","msg":"bound pod","pod":"default/p1",...}
//
// Thread-safe: lines from different threads never interleave. Configure once at start with
// Configure(); the default is info level, text format.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace tessera::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class Format { kText, kJson };

using Field = std::pair<std::string_view, std::string>;
using Fields = std::initializer_list<Field>;

Result<Level> ParseLevel(std::string_view text);
Result<Format> ParseFormat(std::string_view text);

void Configure(Level level, Format format);
bool Enabled(Level level);

void Write(Level level, std::string_view message, Fields fields = {});
inline void Debug(std::string_view m, Fields f = {}) {
  Write(Level::kDebug, m, f);
}
inline void Info(std::string_view m, Fields f = {}) {
  Write(Level::kInfo, m, f);
}
inline void Warn(std::string_view m, Fields f = {}) {
  Write(Level::kWarn, m, f);
}
inline void Error(std::string_view m, Fields f = {}) {
  Write(Level::kError, m, f);
}

// Formats one line without writing it (used by Write; exposed for tests).
std::string FormatLine(Format format, Level level, std::string_view timestamp,
                       std::string_view message, Fields fields);

}  // namespace tessera::log
