// gpu_check's results: one line per check on stdout,
//
//   timeslice.slice                      INFO  slice_ms_p50=2.01 gap_us_p50=24.6 ...
//
// and the same figures as one JSON object per line appended to the --out file:
//
//   {"mode":"timeslice","check":"timeslice.slice","status":"INFO","figures":{"slice_ms_p50":2.01}}
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tessera::gpu_check {

enum class Verdict { kPass, kFail, kInfo };
const char* VerdictName(Verdict v);

// One check: a name, a verdict and its figures in the order added.
struct Check {
  using Value = std::variant<int64_t, double, std::string>;

  std::string name;
  Verdict verdict = Verdict::kInfo;
  std::vector<std::pair<std::string, Value>> figures;

  Check(std::string check_name, Verdict v) : name(std::move(check_name)), verdict(v) {}
  Check& Add(std::string key, double value);
  Check& Add(std::string key, int64_t value);
  Check& Add(std::string key, int value) { return Add(std::move(key), int64_t{value}); }
  Check& Add(std::string key, size_t value) { return Add(std::move(key), int64_t(value)); }
  Check& Add(std::string key, std::string value);
  Check& Add(std::string key, const char* value) { return Add(std::move(key), std::string(value)); }
  Check& Add(std::string key, bool value) = delete;  // say "yes"/"no" in words
};

// "NAME  VERDICT  key=value ..." (strings with spaces are quoted; numbers rounded for reading:
// 4 significant digits, whole numbers from 10,000 up).
std::string FormatLine(const Check& check);

// {"mode":...,"check":...,"status":...,"figures":{...}} without a newline; numbers unrounded.
std::string JsonLine(const std::string& mode, const Check& check);

// Prints each check and appends its JSON line to `out_path` (none when empty); remembers whether
// any check failed.
class Reporter {
 public:
  Reporter(std::string mode, std::string out_path)
      : mode_(std::move(mode)), out_path_(std::move(out_path)) {}

  // False when the --out file cannot be appended to (printed on stderr once).
  bool Emit(const Check& check);
  bool failed() const { return failed_; }

 private:
  std::string mode_;
  std::string out_path_;
  bool failed_ = false;
  bool warned_ = false;
};

}  // namespace tessera::gpu_check
