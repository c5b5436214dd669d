#include "kernel_timing.h"

#include <charconv>

namespace simgpu {
namespace {

// N in `<prefix>N<suffix>`, or false when the name is not of that form or N exceeds an hour.
bool NumberIn(std::string_view name, std::string_view prefix, std::string_view suffix,
              uint64_t* n) {
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return false;
  }
  std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *n);
  return ec == std::errc() && end == digits.data() + digits.size() && *n <= 3'600'000'000ull;
}

}  // namespace

KernelTiming KernelTimingOf(std::string_view name) {
  uint64_t n = 0;
  if (NumberIn(name, "busy_", "us", &n)) return KernelTiming{n * 1000, 0};
  if (NumberIn(name, "grid_", "ns", &n)) return KernelTiming{0, n};
  if (NumberIn(name, "wait_", "", &n)) return KernelTiming{kDefaultKernelNs, 0, n + 1, 0};
  if (NumberIn(name, "signal_", "", &n)) return KernelTiming{kDefaultKernelNs, 0, 0, n + 1};
  return KernelTiming{kDefaultKernelNs, 0};
}

uint64_t KernelDurationNs(const KernelTiming& timing, uint64_t blocks, uint32_t sms) {
  if (timing.per_block_ns == 0) return timing.fixed_ns;
  uint64_t per_wave = sms == 0 ? 1 : sms;
  uint64_t waves = (blocks + per_wave - 1) / per_wave;
  return timing.fixed_ns + waves * timing.per_block_ns;
}

}  // namespace simgpu
