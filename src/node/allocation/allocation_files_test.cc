#include "node/allocation/allocation_files.h"
#include "node/allocation/grant.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tessera::node {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AllocationFilesTest, IdsAreNewAtEveryCall) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewAllocationId();
    ASSERT_EQ(id.size(), 16u);
    ASSERT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_EQ(CdiDeviceName("00ff"), "tessera.io/container=00ff");
}

TEST(AllocationFilesTest, LimitsTextFollowsTheAbi) {
  Grant g{"elastic", {{"GPU-a", 4096, 30}, {"GPU-b", 0, 0}}};
  EXPECT_EQ(LimitsText(g),
            "version=2\nmode=elastic\ndevices=2\nuuid.0=GPU-a\nmemory.0=4294967296\ncores.0=30\n"
            "uuid.1=GPU-b\nmemory.1=0\ncores.1=0\nregion=/var/run/tessera-region/region\n"
            "end=149\n");
  EXPECT_NE(LimitsText(Grant{}).find("devices=0\n"), std::string::npos);
}

// Issue 33: on a GPU whose memory is scaled, every device gets spill.<i> = memory.<i> (all of
// the limit may come from host memory); at scaling 1 the file is what it always was.
TEST(AllocationFilesTest, ScaledGpusGetSpillAndUnscaledOnesAByteIdenticalFile) {
  std::vector<GpuInfo> gpus = {{.uuid = "GPU-a", .index = 0, .memory_mib = 24268},
                               {.uuid = "GPU-b", .index = 1, .memory_mib = 24268}};
  Grant g{"elastic", {{"GPU-a", 4096, 30}, {"GPU-b", 0, 0}}};
  const std::string unscaled = LimitsText(g);
  EXPECT_EQ(LimitsText(g, gpus), unscaled);
  EXPECT_EQ(unscaled.find("spill"), std::string::npos);
  gpus[0].memory_scaling = 2;
  EXPECT_EQ(LimitsText(g, gpus),
            "version=2\nmode=elastic\ndevices=2\nuuid.0=GPU-a\nmemory.0=4294967296\n"
            "spill.0=4294967296\ncores.0=30\nuuid.1=GPU-b\nmemory.1=0\ncores.1=0\n"
            "region=/var/run/tessera-region/region\nend=168\n");
  gpus[1].memory_scaling = 1.5;
  const std::string both = LimitsText(g, gpus);
  EXPECT_NE(both.find("memory.1=0\nspill.1=0\ncores.1=0\n"), std::string::npos) << both;
  // The end marker still counts the bytes before it.
  const size_t end = both.rfind("end=");
  EXPECT_EQ(both.substr(end), "end=" + std::to_string(end) + "\n");
  // A GPU the node does not list counts as unscaled.
  EXPECT_EQ(LimitsText(Grant{"hard", {{"GPU-z", 1024, 0}}}, gpus).find("spill"), std::string::npos);
}

// vcuda's tencent.com/vcuda-core-limit reaches the library as the device's ceiling.
TEST(AllocationFilesTest, CoresLimitBecomesTheElasticCeiling) {
  auto annotation = [](const std::string& mode, int limit) {
    return R"({"version":1,"node":"n","containers":[{"name":"c","mode":")" + mode +
           R"(","devices":[{"uuid":"GPU-1","memoryMiB":10,"cores":30,"coresLimit":)" +
           std::to_string(limit) + "}]}]}";
  };
  auto elastic = GrantFromAllocation(annotation("elastic", 80), "c", "n");
  ASSERT_TRUE(elastic.ok()) << elastic.status().ToString();
  EXPECT_EQ((*elastic)->devices[0].cores_limit, 80);
  EXPECT_NE(LimitsText(**elastic).find("cores.0=30\nceiling.0=80\n"), std::string::npos);
  auto hard = GrantFromAllocation(annotation("hard", 80), "c", "n");
  ASSERT_TRUE(hard.ok());
  EXPECT_EQ(LimitsText(**hard).find("ceiling"), std::string::npos) << "hard already holds to cores";
  auto whole = GrantFromAllocation(annotation("elastic", 100), "c", "n");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(LimitsText(**whole).find("ceiling"), std::string::npos) << "100 = the whole device";
  auto below = GrantFromAllocation(annotation("elastic", 20), "c", "n");
  ASSERT_FALSE(below.ok());
  EXPECT_NE(below.status().message().find("coresLimit 20 (allowed: cores 30 to 100)"),
            std::string::npos)
      << below.status().message();
}

TEST(AllocationFilesTest, CdiSpecNamesDeviceNodes) {
  std::vector<GpuInfo> gpus = {{.uuid = "GPU-a", .index = 0, .device_path = "/dev/nvidia0"},
                               {.uuid = "GPU-b", .index = 1, .device_path = "/dev/nvidia1"}};
  Result<std::string> text = CdiSpecText("00ff", Grant{"hard", {{"GPU-b", 1, 1}}}, gpus);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto spec = nlohmann::json::parse(*text);
  EXPECT_EQ(spec["kind"], "tessera.io/container");
  EXPECT_EQ(spec["devices"][0]["name"], "00ff");
  auto nodes = spec["devices"][0]["containerEdits"]["deviceNodes"];
  EXPECT_EQ(nodes[0]["path"], "/dev/nvidia1");
  EXPECT_EQ(nodes.size(), 4u);  // the GPU plus the control nodes
  EXPECT_FALSE(CdiSpecText("x", Grant{"hard", {{"GPU-zz", 1, 1}}}, gpus).ok());
  // No GPU: no device nodes at all.
  auto empty = nlohmann::json::parse(*CdiSpecText("x", Grant{}, gpus));
  EXPECT_TRUE(empty["devices"][0]["containerEdits"]["deviceNodes"].empty());
  EXPECT_FALSE(nodes[0].contains("hostPath")) << "driver root /: the host path is the path";
}

TEST(AllocationFilesTest, CdiSpecTakesDeviceNodesFromTheDriverRoot) {
  std::vector<GpuInfo> gpus = {{.uuid = "GPU-a", .index = 0, .device_path = "/dev/nvidia0"}};
  Result<std::string> text =
      CdiSpecText("00ff", Grant{"hard", {{"GPU-a", 1, 1}}}, gpus, "/run/nvidia/driver/");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto nodes = nlohmann::json::parse(*text)["devices"][0]["containerEdits"]["deviceNodes"];
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0]["path"], "/dev/nvidia0");
  EXPECT_EQ(nodes[0]["hostPath"], "/run/nvidia/driver/dev/nvidia0");
  EXPECT_EQ(nodes[1]["path"], "/dev/nvidiactl");
  EXPECT_EQ(nodes[1]["hostPath"], "/run/nvidia/driver/dev/nvidiactl");
}

TEST(AllocationFilesTest, AtomicWriteReplacesAndLeavesNoTemp) {
  std::string dir = testing::TempDir() + "/atomic_" + std::to_string(::getpid());
  ASSERT_TRUE(MakeDirs(dir + "/a/b").ok());
  std::string path = dir + "/a/b/limits";
  ASSERT_TRUE(WriteFileAtomic(path, "one").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "two").ok());
  EXPECT_EQ(Read(path), "two");
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir + "/a/b")) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  Status s = WriteFileAtomic(dir + "/missing/limits", "x");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera::node
