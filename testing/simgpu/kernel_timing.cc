#include "kernel_timing.h"

#include <charconv>

#include "driver_state.h"

namespace simgpu {

uint64_t KernelDurationNs(std::string_view name) {
  constexpr std::string_view kPrefix = "busy_";
  constexpr std::string_view kSuffix = "us";
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return kDefaultKernelNs;
  }
  std::string_view digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  uint64_t us = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), us);
  if (ec != std::errc() || end != digits.data() + digits.size() || us > 3'600'000'000ull) {
    return kDefaultKernelNs;
  }
  return us * 1000;
}

}  // namespace simgpu
