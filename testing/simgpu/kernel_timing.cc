#include "kernel_timing.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

#include "mix.h"

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

// The top 53 bits of h as a double in [0, 1).
double Unit(uint64_t h) {
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace

KernelTiming KernelTimingOf(std::string_view name) {
  uint64_t n = 0;
  if (NumberIn(name, "busy_", "us", &n)) return KernelTiming{.fixed_ns = n * 1000};
  if (NumberIn(name, "grid_", "ns", &n)) return KernelTiming{.per_block_ns = n};
  if (NumberIn(name, "work_", "ns", &n)) return KernelTiming{.per_unit_ns = n, .takes_units = true};
  if (NumberIn(name, "touch_", "ns", &n)) {
    return KernelTiming{.per_mib_ns = n, .touches_memory = true};
  }
  if (NumberIn(name, "wait_", "", &n)) {
    return KernelTiming{.fixed_ns = kDefaultKernelNs, .waits_for = n + 1};
  }
  if (NumberIn(name, "signal_", "", &n)) {
    return KernelTiming{.fixed_ns = kDefaultKernelNs, .signals = n + 1};
  }
  return KernelTiming{.fixed_ns = kDefaultKernelNs};
}

uint64_t KernelDurationNs(const KernelTiming& timing, uint64_t blocks, uint32_t sms,
                          uint64_t units) {
  if (timing.takes_units) {
    if (timing.per_unit_ns != 0 && units > kMaxKernelNs / timing.per_unit_ns) return kMaxKernelNs;
    return units * timing.per_unit_ns;
  }
  if (timing.per_block_ns == 0) return timing.fixed_ns;
  uint64_t per_wave = sms == 0 ? 1 : sms;
  uint64_t waves = (blocks + per_wave - 1) / per_wave;
  return timing.fixed_ns + waves * timing.per_block_ns;
}

uint64_t TouchDurationNs(uint64_t per_mib_ns, uint64_t device_bytes, uint64_t host_bytes,
                         uint32_t host_slowdown) {
  // 128-bit products: N (up to an hour) times a byte count overflows 64 bits.
  unsigned __int128 weighted = static_cast<unsigned __int128>(device_bytes) +
                               static_cast<unsigned __int128>(host_bytes) * host_slowdown;
  unsigned __int128 ns = weighted * per_mib_ns >> 20;
  return ns > kMaxKernelNs ? kMaxKernelNs : static_cast<uint64_t>(ns);
}

uint64_t DeviceSeed(std::string_view uuid) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : uuid) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

double JitterFactor(uint64_t seed, uint64_t seq, uint32_t jitter_percent) {
  if (jitter_percent == 0) return 1.0;
  uint64_t h = Mix(seed + seq * kGoldenGamma);  // the seq-th value of splitmix64 seeded `seed`
  double u = Unit(h);                           // the top bits; the outlier draw uses the low ones
  if (h % kOutlierOneIn == 0) return kOutlierMin + (kOutlierMax - kOutlierMin) * u;
  return 1.0 + jitter_percent / 100.0 * (2.0 * u - 1.0);
}

double DriftFactor(const Variation& v, uint64_t now_ns) {
  if (v.drift_percent == 0 || v.drift_period_ns == 0) return 1.0;
  double phase = Unit(Mix(v.seed ^ 0x5d1f7a3c2b9e8d47ull));
  // The integer remainder first: `now` is far larger than a period, a double would lose the ns.
  double cycle = static_cast<double>(now_ns % v.drift_period_ns) / v.drift_period_ns + phase;
  return 1.0 + v.drift_percent / 100.0 * std::sin(2.0 * std::numbers::pi * cycle);
}

uint64_t VariedDurationNs(uint64_t nominal_ns, const Variation& v, uint64_t seq, uint64_t now_ns) {
  if (nominal_ns == 0 || (v.jitter_percent == 0 && v.drift_percent == 0)) return nominal_ns;
  double factor = JitterFactor(v.seed, seq, v.jitter_percent) * DriftFactor(v, now_ns);
  double ns = std::round(static_cast<double>(nominal_ns) * factor);
  return std::max<uint64_t>(1, static_cast<uint64_t>(ns));
}

}  // namespace simgpu
