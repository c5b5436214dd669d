#include "address_space.h"

#include <gtest/gtest.h>

#include "state_layout.h"

namespace simgpu {
namespace {

TEST(SimgpuAddressSpace, RangesAreAlignedUniqueAndReusedOnlyAfterFree) {
  AddressSpace space;
  uint64_t a = space.Allocate(1, 0);
  uint64_t b = space.Allocate(kGranule + 1, 0);
  uint64_t c = space.Allocate(kGranule, 64 * kGranule);
  EXPECT_EQ(a % kGranule, 0u);
  EXPECT_GE(b, a + kGranule);
  EXPECT_EQ(c % (64 * kGranule), 0u);
  EXPECT_GE(c, b + 2 * kGranule);
  space.Free(b, kGranule + 1);
  uint64_t d = space.Allocate(2 * kGranule, 0);
  EXPECT_EQ(d, b);  // first fit reuses the freed range
  space.Free(a, 1);
  space.Free(d, 2 * kGranule);
  space.Free(c, kGranule);
  // Everything coalesced back: the whole space is one range again.
  EXPECT_EQ(space.Allocate(AddressSpace::kSize, 0), AddressSpace::kBase);
  EXPECT_EQ(space.Allocate(kGranule, 0), 0u);  // exhausted
}

}  // namespace
}  // namespace simgpu
