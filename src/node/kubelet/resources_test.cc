#include "node/kubelet/resources.h"

#include <gtest/gtest.h>

namespace tessera::node {
namespace {

GpuInfo Gpu(int index, uint64_t mib) {
  return {.uuid = "GPU-" + std::to_string(index), .index = index, .memory_mib = mib};
}

TEST(ResourcesTest, UnitsPerDialect) {
  GpuInfo g = Gpu(0, 81920);
  EXPECT_EQ(UnitsPerGpu({"nvidia.com/gpu", ResourceKind::kVgpuSlots}, g, 10), 10);
  EXPECT_EQ(UnitsPerGpu({"tencent.com/vcuda-core", ResourceKind::kVcudaCore}, g, 10), 100);
  EXPECT_EQ(UnitsPerGpu({"tencent.com/vcuda-memory", ResourceKind::kVcudaMemory}, g, 10), 320);
  EXPECT_EQ(UnitsPerGpu({"aliyun.com/gpu-mem", ResourceKind::kGpuMemGiB}, g, 10), 80);
}

// Issue 33: the memory-counted resources advertise virtual memory (physical x
// node.device-memory-scaling); slots and cores do not change.
TEST(ResourcesTest, MemoryUnitsCountVirtualMemory) {
  GpuInfo g = Gpu(0, 24268);
  g.memory_scaling = 2;  // 48536 MiB
  EXPECT_EQ(UnitsPerGpu({"tencent.com/vcuda-memory", ResourceKind::kVcudaMemory}, g, 10), 189);
  EXPECT_EQ(UnitsPerGpu({"aliyun.com/gpu-mem", ResourceKind::kGpuMemGiB}, g, 10), 47);
  EXPECT_EQ(UnitsPerGpu({"nvidia.com/gpu", ResourceKind::kVgpuSlots}, g, 10), 10);
  EXPECT_EQ(UnitsPerGpu({"tencent.com/vcuda-core", ResourceKind::kVcudaCore}, g, 10), 100);
  g.memory_scaling = 1.5;  // 36402 MiB
  EXPECT_EQ(UnitsPerGpu({"tencent.com/vcuda-memory", ResourceKind::kVcudaMemory}, g, 10), 142);
  EXPECT_EQ(UnitsPerGpu({"aliyun.com/gpu-mem", ResourceKind::kGpuMemGiB}, g, 10), 35);
  g.memory_scaling = 10;  // 8 x 141 GiB at the most scaling: 5616 x 8 devices, under 4 MiB
  g.memory_mib = 143771;
  EXPECT_EQ(UnitsPerGpu({"tencent.com/vcuda-memory", ResourceKind::kVcudaMemory}, g, 10), 5616);
  EXPECT_EQ(
      DeviceUnits({"tencent.com/vcuda-memory", ResourceKind::kVcudaMemory}, {g, Gpu(1, 24268)}, 10)
          .size(),
      5616u + 94u);
}

TEST(ResourcesTest, ShortIdsNameTheirGpu) {
  auto units = DeviceUnits({"nvidia.com/gpu", ResourceKind::kVgpuSlots}, {Gpu(0, 1), Gpu(7, 1)}, 3);
  ASSERT_EQ(units.size(), 6u);
  EXPECT_EQ(units[0].id, "0-0");
  EXPECT_EQ(units[5].id, "7-2");
  EXPECT_EQ(GpuIndexOfDevice("7-2"), 7);
  EXPECT_EQ(GpuIndexOfDevice("12-345"), 12);
  EXPECT_FALSE(GpuIndexOfDevice("GPU-abc").has_value());
  EXPECT_FALSE(GpuIndexOfDevice("3-").has_value());
  EXPECT_FALSE(GpuIndexOfDevice("-3").has_value());
}

TEST(ResourcesTest, SocketNameIsFlat) {
  EXPECT_EQ(SocketName("nvidia.com/gpu"), "tessera-nvidia.com-gpu.sock");
}

}  // namespace
}  // namespace tessera::node
