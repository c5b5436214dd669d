#include "address_space.h"

#include "state_layout.h"

namespace simgpu {
namespace {
uint64_t RoundUp(uint64_t v, uint64_t to) {
  return (v + to - 1) / to * to;
}
}  // namespace

uint64_t AddressSpace::Allocate(uint64_t size, uint64_t alignment) {
  if (size == 0 || size > kSize) return 0;
  size = RoundUp(size, kGranule);
  if (alignment < kGranule) alignment = kGranule;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    uint64_t start = it->first;
    uint64_t len = it->second;
    uint64_t aligned = RoundUp(start, alignment);
    if (aligned - start + size > len) continue;
    free_.erase(it);
    if (aligned > start) free_[start] = aligned - start;
    if (aligned + size < start + len) free_[aligned + size] = start + len - aligned - size;
    return aligned;
  }
  return 0;
}

void AddressSpace::Free(uint64_t base, uint64_t size) {
  size = RoundUp(size, kGranule);
  auto next = free_.lower_bound(base);
  if (next != free_.end() && next->first == base + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == base) {
      prev->second += size;
      return;
    }
  }
  free_[base] = size;
}

}  // namespace simgpu
