#include "report.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

namespace tessera::gpu_check {

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "PASS";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kInfo:
      return "INFO";
  }
  return "?";
}

Check& Check::Add(std::string key, double value) {
  figures.emplace_back(std::move(key), value);
  return *this;
}

Check& Check::Add(std::string key, int64_t value) {
  figures.emplace_back(std::move(key), value);
  return *this;
}

Check& Check::Add(std::string key, std::string value) {
  figures.emplace_back(std::move(key), std::move(value));
  return *this;
}

namespace {

std::string FormatNumber(double v) {
  char buf[64];
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  if (std::fabs(v) >= 10000) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.4g", v);
  }
  return buf;
}

std::string FormatValue(const Check::Value& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return FormatNumber(*d);
  const std::string& s = std::get<std::string>(value);
  if (s.empty() || s.find_first_of(" \t\"") != std::string::npos) {
    return nlohmann::json(s).dump();
  }
  return s;
}

}  // namespace

std::string FormatLine(const Check& check) {
  char head[128];
  std::snprintf(head, sizeof(head), "%-40s %s", check.name.c_str(), VerdictName(check.verdict));
  std::string line = head;
  for (const auto& [key, value] : check.figures) {
    line += line.size() == std::strlen(head) ? "  " : " ";
    line += key + "=" + FormatValue(value);
  }
  return line;
}

std::string JsonLine(const std::string& mode, const Check& check) {
  nlohmann::ordered_json figures = nlohmann::ordered_json::object();
  for (const auto& [key, value] : check.figures) {
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, double>) {
            // JSON has no NaN or infinity.
            if (std::isfinite(v)) {
              figures[key] = v;
            } else {
              figures[key] = nullptr;
            }
          } else {
            figures[key] = v;
          }
        },
        value);
  }
  nlohmann::ordered_json line = {{"mode", mode},
                                 {"check", check.name},
                                 {"status", VerdictName(check.verdict)},
                                 {"figures", figures}};
  return line.dump();
}

bool Reporter::Emit(const Check& check) {
  std::printf("%s\n", FormatLine(check).c_str());
  std::fflush(stdout);
  if (check.verdict == Verdict::kFail) failed_ = true;
  if (out_path_.empty()) return true;
  FILE* f = std::fopen(out_path_.c_str(), "a");
  bool ok = f != nullptr && std::fprintf(f, "%s\n", JsonLine(mode_, check).c_str()) > 0;
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  if (!ok && !warned_) {
    std::fprintf(stderr, "gpu_check: cannot append to %s: %s\n", out_path_.c_str(),
                 std::strerror(errno));
    warned_ = true;
  }
  return ok;
}

}  // namespace tessera::gpu_check
