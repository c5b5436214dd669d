// splitmix64's pieces, for simgpu's deterministic draws (kernel-time jitter, NVML sampling phases
// and the process drawn at an NVML instant): the same input gives the same value in every process.
#ifndef TESSERA_TESTING_SIMGPU_MIX_H_
#define TESSERA_TESTING_SIMGPU_MIX_H_

#include <cstdint>

namespace simgpu {

inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;  // splitmix64's increment

// splitmix64's output function: a well-mixed 64-bit value of x.
inline uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace simgpu

#endif  // TESSERA_TESTING_SIMGPU_MIX_H_
