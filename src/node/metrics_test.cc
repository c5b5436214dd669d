#include "node/metrics.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "abi/shared_region.h"
#include "node/allocation_files.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, ContainersAndGpus) {
  testing::TempDir dir;
  std::string alloc = dir.path() + "/allocations/abc";
  std::string region = dir.path() + "/regions/abc";
  ASSERT_TRUE(MakeDirs(alloc).ok());
  ASSERT_TRUE(MakeDirs(region).ok());
  ASSERT_TRUE(WriteFileAtomic(alloc + "/owner.json",
                              R"({"namespace":"ns","pod":"p","uid":"u","container":"c"})")
                  .ok());
  ASSERT_TRUE(
      WriteFileAtomic(alloc + "/limits", LimitsText(Grant{"hard", {{"GPU-1", 1024, 30}}})).ok());
  auto r = std::make_unique<tessera_region>();
  std::memset(r.get(), 0, sizeof(tessera_region));
  r->magic = TESSERA_REGION_MAGIC;
  r->version = TESSERA_REGION_VERSION;
  r->devices[0].used_bytes = 12345;
  std::ofstream(region + "/region", std::ios::binary)
      .write(reinterpret_cast<const char*>(r.get()), sizeof(tessera_region));

  std::string text = RenderMetrics(dir.path(), testing::TestGpus(2));
  const std::string labels = R"({namespace="ns",pod="p",container="c",gpu="GPU-1"})";
  EXPECT_THAT(text, HasSubstr("tessera_container_memory_used_bytes" + labels + " 12345\n"));
  EXPECT_THAT(text, HasSubstr("tessera_container_memory_limit_bytes" + labels + " 1073741824\n"));
  EXPECT_THAT(text, HasSubstr("tessera_container_cores_percent" + labels + " 30\n"));
  EXPECT_THAT(text, HasSubstr(R"(tessera_gpu_memory_used_by_containers_bytes{gpu="GPU-1"} 12345)"));
  EXPECT_THAT(text, HasSubstr(R"(tessera_gpu_memory_used_by_containers_bytes{gpu="GPU-0"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(tessera_gpu_healthy{gpu="GPU-0"} 1)"));
  EXPECT_THAT(text, HasSubstr("# TYPE tessera_gpu_memory_total_bytes gauge\n"));

  // A region of another version counts as nothing used.
  r->version = 99;
  std::ofstream(region + "/region", std::ios::binary)
      .write(reinterpret_cast<const char*>(r.get()), sizeof(tessera_region));
  EXPECT_THAT(RenderMetrics(dir.path(), {}),
              HasSubstr("tessera_container_memory_used_bytes" + labels + " 0\n"));
}

}  // namespace
}  // namespace tessera::node
