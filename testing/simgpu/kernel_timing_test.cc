#include "kernel_timing.h"

#include <gtest/gtest.h>

namespace simgpu {
namespace {

uint64_t Duration(const char* name, uint64_t blocks, uint32_t sms) {
  return KernelDurationNs(KernelTimingOf(name), blocks, sms);
}

TEST(SimgpuKernelTiming, BusyKernelsTakeTheirTimeWhateverTheirShape) {
  EXPECT_EQ(Duration("busy_20us", 1, 108), 20'000u);
  EXPECT_EQ(Duration("busy_20us", 100'000, 108), 20'000u);
  EXPECT_EQ(Duration("busy_0us", 1, 108), 0u);
}

TEST(SimgpuKernelTiming, GridKernelsRunTheirBlocksInWavesOverTheSms) {
  EXPECT_EQ(Duration("grid_500ns", 1, 108), 500u);
  EXPECT_EQ(Duration("grid_500ns", 108, 108), 500u);   // one wave
  EXPECT_EQ(Duration("grid_500ns", 109, 108), 1000u);  // a second, partial wave
  EXPECT_EQ(Duration("grid_500ns", 1080, 108), 5000u);
  EXPECT_EQ(Duration("grid_500ns", 1080, 132), 4500u);  // a larger GPU runs it faster
}

TEST(SimgpuKernelTiming, OtherNamesTakeTheDefault) {
  EXPECT_EQ(Duration("gemm", 1, 108), kDefaultKernelNs);
  EXPECT_EQ(Duration("busy_us", 1, 108), kDefaultKernelNs);
  EXPECT_EQ(Duration("grid_12us", 1, 108), kDefaultKernelNs);
  EXPECT_EQ(Duration("grid_x1ns", 1, 108), kDefaultKernelNs);
}

}  // namespace
}  // namespace simgpu
