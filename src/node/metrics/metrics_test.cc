#include "node/metrics/metrics.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "abi/shared_region.h"
#include "common/metric_labels.h"
#include "node/allocation/allocation_files.h"
#include "node/metrics/test_region.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// An allocation folder with owner `container` of pod ns/p and one device per entry of `devices`.
void WriteAllocation(const std::string& state, const std::string& id, const std::string& container,
                     const std::vector<GrantDevice>& devices) {
  std::string alloc = state + "/allocations/" + id;
  ASSERT_TRUE(MakeDirs(alloc).ok());
  ASSERT_TRUE(
      WriteFileAtomic(alloc + "/owner.json",
                      R"({"namespace":"ns","pod":"p","uid":"u","container":")" + container + "\"}")
          .ok());
  ASSERT_TRUE(WriteFileAtomic(alloc + "/limits", LimitsText(Grant{"hard", devices})).ok());
}

using testing::TestRegion;

constexpr char kNode[] = "node-a";

// The labels of GPU `uuid` ("GPU-<index>") of testing::TestGpus.
std::string GpuOf(const std::string& uuid) {
  return GpuLabels(kNode, std::stoi(uuid.substr(4)), uuid, "NVIDIA H100");
}

std::string Labels(const std::string& container, const std::string& gpu) {
  return R"({namespace="ns",pod="p",container=")" + container + "\"," + GpuOf(gpu) + "}";
}

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
  TestRegion r(region + "/region", 12345);

  std::string text = RenderMetrics(kNode, dir.path(), testing::TestGpus(2));
  const std::string labels = Labels("c", "GPU-1");
  EXPECT_THAT(text, HasSubstr("tessera_container_memory_used_bytes" + labels + " 12345\n"));
  EXPECT_THAT(text, HasSubstr("tessera_container_memory_limit_bytes" + labels + " 1073741824\n"));
  EXPECT_THAT(text, HasSubstr("tessera_container_compute_limit_percent" + labels + " 30\n"));
  // No pids file, no NVML samples: no share sample, but the family is declared.
  EXPECT_THAT(text, Not(HasSubstr("tessera_container_compute_share_percent{")));
  EXPECT_THAT(text, HasSubstr("# TYPE tessera_container_compute_share_percent gauge\n"));
  EXPECT_THAT(text, HasSubstr("tessera_gpu_memory_used_by_containers_bytes{" + GpuOf("GPU-1") +
                              "} 12345\n"));
  EXPECT_THAT(text,
              HasSubstr("tessera_gpu_memory_used_by_containers_bytes{" + GpuOf("GPU-0") + "} 0\n"));
  EXPECT_THAT(text, HasSubstr("tessera_gpu_healthy{" + GpuOf("GPU-0") + "} 1\n"));
  EXPECT_THAT(text, HasSubstr("tessera_gpu_memory_total_bytes{" + GpuOf("GPU-1") + "} " +
                              std::to_string(81920ull << 20) + "\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE tessera_gpu_memory_total_bytes gauge\n"));

  // A region of another version counts as nothing used.
  r.region->version = 99;
  r.Write();
  EXPECT_THAT(RenderMetrics(kNode, dir.path(), testing::TestGpus(2)),
              HasSubstr("tessera_container_memory_used_bytes" + labels + " 0\n"));
}

// Issue 28: a process keeps its charge after it exits, until another process of the container
// sweeps it. The exporter counts only live processes' charges: a container whose processes are
// all gone reads 0 at once. A slot of an older library (no liveness lock) counts as alive.
// Issue 34: a MIG device's use counts in its GPU's figure too.
TEST(MetricsTest, AGpusUseIncludesItsMigDevices) {
  testing::TempDir dir;
  WriteAllocation(dir.path(), "abc", "c", {{"MIG-a", 1024, 0}});
  ASSERT_TRUE(MakeDirs(dir.path() + "/regions/abc").ok());
  TestRegion r(dir.path() + "/regions/abc/region", 4096);
  std::vector<GpuInfo> gpus = testing::TestGpus(2);
  gpus[1].mig.capable = true;
  gpus[1].mig.enabled = true;
  MigInstanceInfo m;
  m.uuid = "MIG-a";
  m.profile = m.device_name = "3g.40gb";
  m.memory_mib = 40448;
  gpus[1].mig.instances.push_back(m);
  const std::string text = RenderMetrics(kNode, dir.path(), gpus);
  EXPECT_THAT(text, HasSubstr("tessera_mig_instance_memory_used_by_containers_bytes{" +
                              GpuOf("GPU-1") + ",mig_uuid=\"MIG-a\""));
  EXPECT_THAT(text, HasSubstr("tessera_gpu_memory_used_by_containers_bytes{" + GpuOf("GPU-1") +
                              "} 4096\n"));
  EXPECT_THAT(text,
              HasSubstr("tessera_gpu_memory_used_by_containers_bytes{" + GpuOf("GPU-0") + "} 0\n"));
}

TEST(MetricsTest, MemoryOfProcessesThatAreGoneIsNotCounted) {
  testing::TempDir dir;
  WriteAllocation(dir.path(), "abc", "c", {{"GPU-0", 4096, 0}});
  ASSERT_TRUE(MakeDirs(dir.path() + "/regions/abc").ok());
  TestRegion r(dir.path() + "/regions/abc/region", 3u << 20);
  r.region->slots[1].pid = 2;  // an older library's process: 5 MiB
  r.region->slots[1].used_bytes[0] = 5u << 20;
  r.region->slots[2].pid = 3;  // a process that held the lock and is gone: 7 MiB
  r.region->slots[2].flags = TESSERA_SLOT_LIVENESS_LOCK;
  r.region->slots[2].used_bytes[0] = 7u << 20;
  r.region->devices[0].used_bytes = 15u << 20;
  r.Write();
  const std::string used = "tessera_container_memory_used_bytes" + Labels("c", "GPU-0");
  EXPECT_THAT(RenderMetrics(kNode, dir.path(), testing::TestGpus(2)),
              HasSubstr(used + " 8388608\n"));
  r.Die();
  EXPECT_THAT(RenderMetrics(kNode, dir.path(), testing::TestGpus(2)),
              HasSubstr(used + " 5242880\n"));
}

// A DRA claim's folder (owner.json names the claim): its own families, labelled by the claim; its
// use counts in the GPU's sum; no container row.
TEST(MetricsTest, DraClaimsHaveTheirOwnFamilies) {
  testing::TempDir dir;
  WriteAllocation(dir.path(), "a", "train", {{"GPU-0", 1024, 30}});
  std::string claim = dir.path() + "/allocations/9b2e";
  ASSERT_TRUE(MakeDirs(claim).ok());
  ASSERT_TRUE(MakeDirs(dir.path() + "/regions/9b2e").ok());
  ASSERT_TRUE(WriteFileAtomic(claim + "/owner.json",
                              R"({"kind":"ResourceClaim","namespace":"ml","claim":"shared-gpu",)"
                              R"("claimUid":"9b2e"})")
                  .ok());
  ASSERT_TRUE(
      WriteFileAtomic(claim + "/limits", LimitsText(Grant{"hard", {{"GPU-0", 4096, 50}}})).ok());
  TestRegion r(dir.path() + "/regions/9b2e/region", 3u << 30);
  // The claim's pids file (its pods' processes, pids_refresher.h) gives its compute share.
  ASSERT_TRUE(WriteFileAtomic(claim + "/pids", "version=1\n300 1\n301 9\n").ok());
  ProcessShares shares = {{"GPU-0", {{300, 20}, {301, 25}, {400, 30}}}};

  std::string text = RenderMetrics(kNode, dir.path(), testing::TestGpus(1), shares);
  const std::string labels = R"({namespace="ml",claim="shared-gpu",)" + GpuOf("GPU-0") + "}";
  EXPECT_THAT(text, HasSubstr("tessera_claim_compute_share_percent" + labels + " 45\n"));
  EXPECT_THAT(text, Not(HasSubstr(R"(tessera_container_compute_share_percent{namespace="ml")")));
  EXPECT_THAT(text, HasSubstr("tessera_claim_memory_used_bytes" + labels + " 3221225472\n"));
  EXPECT_THAT(text, HasSubstr("tessera_claim_memory_limit_bytes" + labels + " 4294967296\n"));
  EXPECT_THAT(text, HasSubstr("tessera_claim_compute_limit_percent" + labels + " 50\n"));
  EXPECT_THAT(text, HasSubstr("tessera_container_memory_limit_bytes" + Labels("train", "GPU-0")));
  EXPECT_THAT(text, Not(HasSubstr(R"(tessera_container_memory_used_bytes{namespace="ml")")));
  EXPECT_THAT(text, Not(HasSubstr(R"(tessera_claim_memory_used_bytes{namespace="ns")")));
  EXPECT_THAT(text, HasSubstr("tessera_gpu_memory_used_by_containers_bytes{" + GpuOf("GPU-0") +
                              "} 3221225472\n"));
}

TEST(MetricsTest, ComputeShareAddsUpTheContainersProcessesPerGpu) {
  testing::TempDir dir;
  WriteAllocation(dir.path(), "a", "train", {{"GPU-0", 1024, 30}, {"GPU-1", 1024, 0}});
  WriteAllocation(dir.path(), "b", "serve", {{"GPU-0", 1024, 70}});
  WriteAllocation(dir.path(), "c", "nopids", {{"GPU-0", 1024, 0}});
  // Host PIDs 100 and 101 (with their PIDs in the container) belong to "train", 200 to "serve".
  ASSERT_TRUE(
      WriteFileAtomic(dir.path() + "/allocations/a/pids", "version=1\n100 1\n101 7\n").ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/allocations/b/pids", "version=1\n200 1\n").ok());
  ProcessShares shares = {{"GPU-0", {{100, 12}, {101, 17}, {200, 66}, {300, 5}}}};

  std::string text = RenderMetrics(kNode, dir.path(), testing::TestGpus(2), shares);
  const std::string share = "tessera_container_compute_share_percent";
  EXPECT_THAT(text, HasSubstr(share + Labels("train", "GPU-0") + " 29\n"));
  EXPECT_THAT(text, HasSubstr(share + Labels("serve", "GPU-0") + " 66\n"));
  EXPECT_THAT(text, HasSubstr("tessera_container_compute_limit_percent" + Labels("serve", "GPU-0") +
                              " 70\n"));
  // NVML said nothing about GPU-1, and "nopids" has no pids file: no sample for either.
  EXPECT_THAT(text, Not(HasSubstr(share + Labels("train", "GPU-1"))));
  EXPECT_THAT(text, Not(HasSubstr(share + Labels("nopids", "GPU-0"))));

  // A GPU that no process used (NVML: no samples) gives 0; more than the GPU's time is capped.
  shares = {{"GPU-0", {{100, 80}, {101, 40}}}, {"GPU-1", {}}};
  text = RenderMetrics(kNode, dir.path(), testing::TestGpus(2), shares);
  EXPECT_THAT(text, HasSubstr(share + Labels("train", "GPU-0") + " 100\n"));
  EXPECT_THAT(text, HasSubstr(share + Labels("train", "GPU-1") + " 0\n"));
  EXPECT_THAT(text, HasSubstr(share + Labels("serve", "GPU-0") + " 0\n"));

  // A pids file of another version is not trusted.
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/allocations/a/pids", "version=2\n100 1\n").ok());
  text = RenderMetrics(kNode, dir.path(), testing::TestGpus(2), shares);
  EXPECT_THAT(text, Not(HasSubstr(share + Labels("train", "GPU-0"))));
}

// "No limit" is reported as the bound in force, the whole GPU (memory) and 100 percent (compute),
// so that used / limit and share / limit never divide by zero. A device the node no longer has
// keeps its row, with an empty gpu label and the limit its grant gives.
TEST(MetricsTest, NoLimitIsTheWholeGpu) {
  testing::TempDir dir;
  WriteAllocation(dir.path(), "a", "free", {{"GPU-1", 0, 0}, {"GPU-7", 0, 100}});
  std::string text = RenderMetrics(kNode, dir.path(), testing::TestGpus(2, 1024));
  EXPECT_THAT(text, HasSubstr("tessera_container_memory_limit_bytes" + Labels("free", "GPU-1") +
                              " 1073741824\n"));
  EXPECT_THAT(text, HasSubstr("tessera_container_compute_limit_percent" + Labels("free", "GPU-1") +
                              " 100\n"));
  const std::string gone =
      R"({namespace="ns",pod="p",container="free",)" + GpuLabels(kNode, -1, "GPU-7", "") + "}";
  EXPECT_THAT(text, HasSubstr("tessera_container_memory_limit_bytes" + gone + " 0\n"));
  EXPECT_THAT(text, HasSubstr("tessera_container_compute_limit_percent" + gone + " 100\n"));
}

// Issue 33: per GPU both the physical and the virtual memory (node.device-memory-scaling); a
// container's limit on a scaled GPU may pass the physical memory, and a limits file with spill
// keys is read as before.
TEST(MetricsTest, ScaledGpusGiveTheirPhysicalAndVirtualMemory) {
  testing::TempDir dir;
  std::vector<GpuInfo> gpus = testing::TestGpus(2, 24268);
  gpus[1].memory_scaling = 2;
  std::string alloc = dir.path() + "/allocations/big";
  ASSERT_TRUE(MakeDirs(alloc).ok());
  ASSERT_TRUE(WriteFileAtomic(alloc + "/owner.json",
                              R"({"namespace":"ns","pod":"p","uid":"u","container":"big"})")
                  .ok());
  const std::string limits = LimitsText(Grant{"hard", {{"GPU-1", 40960, 0}}}, gpus);
  ASSERT_NE(limits.find("spill.0="), std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(alloc + "/limits", limits).ok());
  std::string text = RenderMetrics(kNode, dir.path(), gpus);
  EXPECT_THAT(text, HasSubstr("# TYPE tessera_gpu_memory_virtual_total_bytes gauge\n"));
  EXPECT_THAT(text, HasSubstr("tessera_gpu_memory_total_bytes{" + GpuOf("GPU-1") + "} " +
                              std::to_string(24268ull << 20) + "\n"));
  EXPECT_THAT(text, HasSubstr("tessera_gpu_memory_virtual_total_bytes{" + GpuOf("GPU-1") + "} " +
                              std::to_string(48536ull << 20) + "\n"));
  EXPECT_THAT(text, HasSubstr("tessera_gpu_memory_virtual_total_bytes{" + GpuOf("GPU-0") + "} " +
                              std::to_string(24268ull << 20) + "\n"))
      << "unscaled: the same as the total";
  EXPECT_THAT(text, HasSubstr("tessera_container_memory_limit_bytes" + Labels("big", "GPU-1") +
                              " " + std::to_string(40960ull << 20) + "\n"));
}

// Issue 33: of what a container's live processes use, the part the library served from host
// memory (the region's spill appendix); a region of a library before it has no appendix (0), and
// a process that is gone counts for nothing.
TEST(MetricsTest, SpilledMemoryIsThePartOfTheUseServedFromHostMemory) {
  testing::TempDir dir;
  std::vector<GpuInfo> gpus = testing::TestGpus(2, 24268);
  for (GpuInfo& g : gpus) g.memory_scaling = 2;
  WriteAllocation(dir.path(), "big", "big", {{"GPU-1", 20480, 0}});
  ASSERT_TRUE(MakeDirs(dir.path() + "/regions/big").ok());
  const std::string path = dir.path() + "/regions/big/region";
  TestRegion r(path, 20480ull << 20);
  const std::string spilled = "tessera_container_memory_spilled_bytes" + Labels("big", "GPU-1");
  EXPECT_THAT(RenderMetrics(kNode, dir.path(), gpus), HasSubstr(spilled + " 0\n"));

  r.region->spill_offset = TESSERA_REGION_SPILL_OFFSET;
  r.Write();
  auto spill = std::make_unique<tessera_region_spill>();
  std::memset(spill.get(), 0, sizeof(tessera_region_spill));
  spill->device_bytes[0] = 4096ull << 20;
  spill->slot_bytes[0][0] = 4096ull << 20;
  {
    std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
    file.seekp(static_cast<std::streamoff>(TESSERA_REGION_SPILL_OFFSET));
    file.write(reinterpret_cast<const char*>(spill.get()), sizeof(tessera_region_spill));
  }
  std::string text = RenderMetrics(kNode, dir.path(), gpus);
  EXPECT_THAT(text, HasSubstr("# TYPE tessera_container_memory_spilled_bytes gauge\n"));
  EXPECT_THAT(text, HasSubstr("tessera_container_memory_used_bytes" + Labels("big", "GPU-1") + " " +
                              std::to_string(20480ull << 20) + "\n"));
  EXPECT_THAT(text, HasSubstr(spilled + " " + std::to_string(4096ull << 20) + "\n"));
  r.Die();
  EXPECT_THAT(RenderMetrics(kNode, dir.path(), gpus), HasSubstr(spilled + " 0\n"));
}

}  // namespace
}  // namespace tessera::node
