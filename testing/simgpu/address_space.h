// AddressSpace: hands out this process's simulated device virtual addresses. Ranges are aligned to
// the 2 MiB granule, unique among live ranges, and reused only after they are freed (as a real
// driver does). The addresses lie in [kBase, kBase + kSize), far from where Linux maps host memory;
// nothing is ever mapped there, so a program that dereferences a device pointer faults, as it
// would on a real GPU.
//
// Thread-compatible: the driver calls it under its process mutex.
#pragma once

#include <cstdint>
#include <map>

namespace simgpu {

class AddressSpace {
 public:
  static constexpr uint64_t kBase = 0x200000000000ull;  // 32 TiB
  static constexpr uint64_t kSize = 0x100000000000ull;  // 16 TiB

  AddressSpace() { free_[kBase] = kSize; }

  // A free range of `size` bytes (rounded up to the granule) aligned to `alignment` (0 or a power
  // of two; at least the granule). 0 when the space is exhausted.
  uint64_t Allocate(uint64_t size, uint64_t alignment);

  // Returns [base, base + size) (as given to Allocate) to the free ranges.
  void Free(uint64_t base, uint64_t size);

 private:
  std::map<uint64_t, uint64_t> free_;  // start -> length, disjoint and not adjacent
};

}  // namespace simgpu
