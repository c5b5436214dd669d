#include "log/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include <nlohmann/json.hpp>

namespace tessera::log {
namespace {

std::atomic<Level> g_level{Level::kInfo};
std::atomic<Format> g_format{Format::kText};
std::mutex g_write_mutex;

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

std::string Now() {
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms.count()));
  return buf;
}

const char* ToUpperName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kWarn:
      return "WARN";
    case Level::kError:
      return "ERROR";
  }
  return "INFO";
}

bool NeedsQuotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') return true;
  }
  return false;
}

}  // namespace

Result<Level> ParseLevel(std::string_view text) {
  if (text == "debug") return Level::kDebug;
  if (text == "info") return Level::kInfo;
  if (text == "warn" || text == "warning") return Level::kWarn;
  if (text == "error") return Level::kError;
  return InvalidArgument("unknown log level \"" + std::string(text) +
                         "\" (allowed: debug, info, warn, error)");
}

Result<Format> ParseFormat(std::string_view text) {
  if (text == "text") return Format::kText;
  if (text == "json") return Format::kJson;
  return InvalidArgument("unknown log format \"" + std::string(text) + "\" (allowed: text, json)");
}

void Configure(Level level, Format format) {
  g_level = level;
  g_format = format;
}

bool Enabled(Level level) {
  return level >= g_level.load(std::memory_order_relaxed);
}

std::string FormatLine(Format format, Level level, std::string_view timestamp,
                       std::string_view message, Fields fields) {
  if (format == Format::kJson) {
    nlohmann::ordered_json j;
    j["ts"] = timestamp;
    j["level"] = LevelName(level);
    j["msg"] = message;
    for (const auto& [k, v] : fields) j[std::string(k)] = v;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string line(timestamp);
  line += ' ';
  line += ToUpperName(level);
  line += ' ';
  line += message;
  for (const auto& [k, v] : fields) {
    line += ' ';
    line += k;
    line += '=';
    line += NeedsQuotes(v) ? nlohmann::json(v).dump() : v;
  }
  line += '\n';
  return line;
}

void Write(Level level, std::string_view message, Fields fields) {
  if (!Enabled(level)) return;
  std::string line = FormatLine(g_format.load(), level, Now(), message, fields);
  std::lock_guard<std::mutex> lock(g_write_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace tessera::log
