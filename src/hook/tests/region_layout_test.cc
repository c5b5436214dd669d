// Pins the layout of the shared region (abi/shared_region.h): the node agent's metrics exporter
// reads it, so a change of any offset or size must come with a new TESSERA_REGION_VERSION.
#include <cstddef>

#include <gtest/gtest.h>

#include "abi/shared_region.h"

namespace {

TEST(RegionLayout, Version1IsPinned) {
  EXPECT_EQ(TESSERA_REGION_VERSION, 1u);
  EXPECT_EQ(TESSERA_REGION_MAGIC, 0x3147455241535354ull);
  EXPECT_EQ(sizeof(tessera_region_device), 128u);
  EXPECT_EQ(offsetof(tessera_region_device, used_bytes), 8u);
  EXPECT_EQ(offsetof(tessera_region_device, peak_bytes), 16u);
  EXPECT_EQ(offsetof(tessera_region_device, context_bytes), 24u);
  EXPECT_EQ(offsetof(tessera_region_device, cores_percent), 32u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_gain_streak), 36u);  // reserved0 before, 0
  EXPECT_EQ(offsetof(tessera_region_device, compute_tat_ns), 40u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_contended_ns), 48u);
  EXPECT_EQ(offsetof(tessera_region_device, reserved3), 56u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_gain), 64u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_gain_recent), 68u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_poll_us), 72u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_waited_ns), 80u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_poll_waited_ns), 88u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_gain_us), 96u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_start_us), 104u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_sample_us), 112u);
  EXPECT_EQ(offsetof(tessera_region_device, compute_streak_us), 120u);  // reserved2 before
  EXPECT_EQ(sizeof(tessera_region_slot), 144u);
  EXPECT_EQ(offsetof(tessera_region_slot, start_time), 8u);
  EXPECT_EQ(offsetof(tessera_region_slot, used_bytes), 16u);
  EXPECT_EQ(offsetof(tessera_region, version), 8u);
  EXPECT_EQ(offsetof(tessera_region, total_size), 16u);
  EXPECT_EQ(offsetof(tessera_region, device_count), 24u);
  EXPECT_EQ(offsetof(tessera_region, last_sweep_ns), 32u);
  EXPECT_EQ(offsetof(tessera_region, boot_id), 40u);
  EXPECT_EQ(offsetof(tessera_region, spill_offset), 56u);  // reserved[0] before, 0
  EXPECT_EQ(offsetof(tessera_region, lock), 64u);
  EXPECT_EQ(offsetof(tessera_region, devices), 128u);
  EXPECT_EQ(offsetof(tessera_region, slots), 128u + 16 * 128u);
  EXPECT_EQ(sizeof(tessera_region), 128u + 16 * 128u + 1024 * 144u);
  EXPECT_LE(sizeof(pthread_mutex_t), 64u);
}

// The spill appendix (issue 33) lies past the fixed part, whose layout and version it leaves as
// they were: readers of the fixed part read a region with the appendix unchanged.
TEST(RegionLayout, SpillAppendixFollowsTheFixedPart) {
  EXPECT_EQ(TESSERA_REGION_SPILL_OFFSET, sizeof(tessera_region));
  EXPECT_EQ(TESSERA_REGION_SPILL_OFFSET % 8, 0u);
  EXPECT_EQ(offsetof(tessera_region_spill, device_bytes), 0u);
  EXPECT_EQ(offsetof(tessera_region_spill, slot_bytes), 16 * 8u);
  EXPECT_EQ(sizeof(tessera_region_spill), 16 * 8u + 1024 * 16 * 8u);
  EXPECT_EQ(TESSERA_REGION_FILE_SIZE, sizeof(tessera_region) + sizeof(tessera_region_spill));
}

}  // namespace
