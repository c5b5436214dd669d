// How long a simulated kernel occupies its device. A function named `busy_<N>us` takes N
// microseconds per launch whatever its shape; one named `grid_<N>ns` takes N nanoseconds per
// block, its blocks spread over the device's SMs in waves (ceil(blocks / SMs) waves of N ns); any
// other name takes 10 microseconds. `signal_<K>` (10 us) sets signal K of the process when it ends;
// `wait_<K>` spins until signal K is set (on any device of the process), then takes 10 us, as
// NCCL's kernels and kernels polling a flag do. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string_view>

namespace simgpu {

inline constexpr uint64_t kDefaultKernelNs = 10'000;

struct KernelTiming {
  uint64_t fixed_ns = 0;      // per launch
  uint64_t per_block_ns = 0;  // per wave of blocks (0: the time does not follow the shape)
  uint64_t waits_for = 0;     // K + 1 for `wait_<K>`, else 0
  uint64_t signals = 0;       // K + 1 for `signal_<K>`, else 0
};

KernelTiming KernelTimingOf(std::string_view name);

// The device time of one launch of `blocks` blocks on a device with `sms` SMs.
uint64_t KernelDurationNs(const KernelTiming& timing, uint64_t blocks, uint32_t sms);

}  // namespace simgpu
