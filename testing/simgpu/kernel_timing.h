// How long a simulated kernel occupies its device (docs/simgpu.md, "Kernels and the timing model").
//
// The nominal time follows the kernel's name: `busy_<N>us` takes N microseconds per launch whatever
// its shape; `grid_<N>ns` takes N nanoseconds per block, its blocks spread over the device's SMs
// in waves (ceil(blocks / SMs) waves of N ns); `work_<N>ns` takes N nanoseconds per unit of work,
// the unit count being its first kernel argument (a uint64_t), whatever its grid, as persistent
// kernels launched with one block per SM do; `touch_<N>ns` reads a range of memory, its first two
// arguments (a device pointer and a byte count): N nanoseconds per MiB of device memory, the
// device's host slowdown (hostslow=) times that per MiB of host memory the device maps (the
// launch checks the range, stream_ops.h); any other name takes 10 microseconds. `signal_<K>`
// (10 us) sets signal K of the process when it ends; `wait_<K>` spins until signal K is set (on
// any device of the process), then takes 10 us, as NCCL's kernels and kernels polling a flag do.
//
// The time a launch really takes varies around the nominal one ("Kernel-time variation"):
//   jitter J%: a factor per launch, uniform in [1 - J/100, 1 + J/100], drawn from (device seed,
//     launch seq) with splitmix64, so a launch's time is reproducible; and when J > 0, one launch
//     in 256 (kOutlierOneIn) is an outlier taking 1.5x to 3x (uniform) instead. The outliers lift
//     the mean by 1.25/256, about 0.5%.
//   drift D% over period P: every launch's time is multiplied by the device's speed at launch,
//     1 + D/100 * sin(2 pi (now / P + phase)), the phase in [0, 1) a function of the device seed
//     (devices of one machine drift apart), as clocks do under power or thermal capping.
// J = 0 and D = 0 give exactly the nominal time; a 0 ns kernel stays 0, any other at least 1 ns.
//
// Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace simgpu {

inline constexpr uint64_t kDefaultKernelNs = 10'000;

// No nominal kernel time exceeds an hour (a `work_` kernel's units * N is clamped to it).
inline constexpr uint64_t kMaxKernelNs = 3'600'000'000'000;

// Jitter's outliers: one launch in kOutlierOneIn takes kOutlierMin to kOutlierMax times nominal.
inline constexpr uint64_t kOutlierOneIn = 256;
inline constexpr double kOutlierMin = 1.5;
inline constexpr double kOutlierMax = 3.0;

struct KernelTiming {
  uint64_t fixed_ns = 0;        // per launch
  uint64_t per_block_ns = 0;    // per wave of blocks (0: the time does not follow the shape)
  uint64_t waits_for = 0;       // K + 1 for `wait_<K>`, else 0
  uint64_t signals = 0;         // K + 1 for `signal_<K>`, else 0
  uint64_t per_unit_ns = 0;     // `work_<N>ns`: N
  bool takes_units = false;     // `work_<N>ns`: its first argument is the unit count
  uint64_t per_mib_ns = 0;      // `touch_<N>ns`: N
  bool touches_memory = false;  // `touch_<N>ns`: its first arguments are a pointer and a size
};

KernelTiming KernelTimingOf(std::string_view name);

// The nominal device time of one launch of `blocks` blocks on a device with `sms` SMs; `units` is
// the unit count of a `work_<N>ns` kernel (ignored for the others). Not for `touch_<N>ns`
// kernels, whose time depends on the memory they read (TouchDurationNs).
uint64_t KernelDurationNs(const KernelTiming& timing, uint64_t blocks, uint32_t sms,
                          uint64_t units);

// The nominal time of a `touch_<N>ns` kernel (`per_mib_ns` = N) that reads `device_bytes` of
// device memory and `host_bytes` of host memory on a device whose host slowdown is
// `host_slowdown`: N ns per MiB (2^20 bytes) of the first, N * host_slowdown per MiB of the
// second, rounded down, at most kMaxKernelNs.
uint64_t TouchDurationNs(uint64_t per_mib_ns, uint64_t device_bytes, uint64_t host_bytes,
                         uint32_t host_slowdown);

// A device's kernel-time variation: its settings (state_layout.h's DeviceState) and its seed.
struct Variation {
  uint32_t jitter_percent = 0;
  uint32_t drift_percent = 0;
  uint64_t drift_period_ns = 0;  // 0: no drift
  uint64_t seed = 0;
};

// A per-device seed from the device's UUID (FNV-1a of the text).
uint64_t DeviceSeed(std::string_view uuid);

// The jitter factor of launch `seq` (per device, from 1) of a device seeded `seed`, with jitter
// `jitter_percent`: 1 when it is 0.
double JitterFactor(uint64_t seed, uint64_t seq, uint32_t jitter_percent);

// The device's speed factor at `now_ns` (CLOCK_MONOTONIC): 1 when drift is off.
double DriftFactor(const Variation& v, uint64_t now_ns);

// The time launch `seq` of nominal time `nominal_ns`, queued at `now_ns`, really takes.
uint64_t VariedDurationNs(uint64_t nominal_ns, const Variation& v, uint64_t seq, uint64_t now_ns);

}  // namespace simgpu
