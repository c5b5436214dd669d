// The clocks simgpu uses: CLOCK_MONOTONIC nanoseconds, shared by every process of the machine, for
// the device timeline; CLOCK_REALTIME microseconds for NVML timestamps. Thread-safe (no state).
#pragma once

#include <time.h>

#include <cerrno>
#include <cstdint>

namespace simgpu {

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t RealtimeUs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000ull + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

// Sleeps (does not spin) until CLOCK_MONOTONIC reaches `deadline_ns`.
inline void SleepUntilNs(uint64_t deadline_ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000ull);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

inline void SleepForNs(uint64_t ns) {
  SleepUntilNs(NowNs() + ns);
}

}  // namespace simgpu
