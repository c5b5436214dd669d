// Unit tests of the VMM table (vmm_map.c): a handle's charge is released with the last of its
// references (creation, retains) and mappings, in any order.
#include <gtest/gtest.h>

extern "C" {
#include "hook/vmm_map.h"
}

namespace {

constexpr uint64_t kBytes = 2ull << 20;

TEST(VmmMapTest, ReleasedWithTheLastMappingAfterTheRelease) {
  int stale_index = -1, index = -1;
  uint64_t stale_bytes = 0, bytes = 0, per_device[2] = {0, 0};
  ASSERT_EQ(vmm_add_handle(0x1000, 1, kBytes, &stale_index, &stale_bytes), 0);
  ASSERT_EQ(vmm_map(0x7000000, kBytes, 0x1000), 0);
  EXPECT_EQ(vmm_release(0x1000, &index, &bytes), 0);  // the mapping holds it
  EXPECT_EQ(vmm_unmap(0x7000000, kBytes, per_device, 2), 1);
  EXPECT_EQ(per_device[1], kBytes);
  EXPECT_EQ(vmm_release(0x1000, &index, &bytes), -1);  // gone
}

TEST(VmmMapTest, ARetainedReferenceHoldsTheChargeUntilItIsReleased) {
  // NCCL's free: retain, release, unmap, release.
  int stale_index = -1, index = -1;
  uint64_t stale_bytes = 0, bytes = 0, per_device[1] = {0};
  ASSERT_EQ(vmm_add_handle(0x2000, 0, kBytes, &stale_index, &stale_bytes), 0);
  ASSERT_EQ(vmm_map(0x8000000, kBytes, 0x2000), 0);
  ASSERT_EQ(vmm_retain(0x2000), 0);
  EXPECT_EQ(vmm_release(0x2000, &index, &bytes), 0);
  EXPECT_EQ(vmm_unmap(0x8000000, kBytes, per_device, 1), 0);  // one reference is left
  EXPECT_EQ(per_device[0], 0u);
  EXPECT_EQ(vmm_release(0x2000, &index, &bytes), 1);
  EXPECT_EQ(index, 0);
  EXPECT_EQ(bytes, kBytes);
  EXPECT_EQ(vmm_retain(0x3000), -1);  // a handle the library did not create
}

}  // namespace
