#include "node/agent.h"
#include "node/kubelet/kubelet_version.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "node/config_keys.h"
#include "node/containers/fake_cgroup_tree.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using ::testing::HasSubstr;
using namespace tessera::node::testing;

class ListGpuSource : public GpuSource {
 public:
  explicit ListGpuSource(Result<std::vector<GpuInfo>> gpus) : gpus_(std::move(gpus)) {}
  Result<std::vector<GpuInfo>> Discover() override { return gpus_; }

 private:
  Result<std::vector<GpuInfo>> gpus_;
};

AgentOptions Options(const TempDir& dir, bool fail_on_init_error) {
  AgentOptions o;
  o.allocator.node_name = "n";
  o.allocator.state_dir = dir.path() + "/state";
  o.allocator.cdi_dir = dir.path() + "/cdi";
  o.kubelet_dir = dir.path() + "/kubelet";
  o.resources = {{"nvidia.com/gpu", ResourceKind::kVgpuSlots}};
  o.fail_on_init_error = fail_on_init_error;
  std::filesystem::create_directories(o.kubelet_dir + "/device-plugins");
  return o;
}

bool WaitForAnnotation(const MemoryPodStore& store, const std::string& needle) {
  for (int i = 0; i < 100; ++i) {
    auto a = store.NodeAnnotations();
    if (a.count(kGpusAnnotation) && a[kGpusAnnotation].find(needle) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(AgentTest, PublishesTheInventoryAndItsHealthChanges) {
  TempDir dir;
  MemoryPodStore store("n");
  FakeDeviceAssignments kubelet;
  ListGpuSource gpus(TestGpus(2));
  Agent agent(Options(dir, true), gpus, store, store, kubelet);
  ASSERT_TRUE(agent.Start().ok());
  ASSERT_TRUE(WaitForAnnotation(store, "\"uuid\":\"GPU-1\""));
  auto doc = nlohmann::json::parse(store.NodeAnnotations()[kGpusAnnotation]);
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["gpus"][1]["memoryMiB"], 81920);
  EXPECT_EQ(doc["gpus"][1]["sms"], 132);
  EXPECT_EQ(doc["gpus"][1]["healthy"], true);
  agent.board().SetHealthy("GPU-1", false);
  EXPECT_TRUE(WaitForAnnotation(store, "\"healthy\":false"));
  agent.Stop();
}

TEST(AgentTest, InitErrorIsFatalOnlyWhenAsked) {
  TempDir dir;
  MemoryPodStore store("n");
  FakeDeviceAssignments kubelet;
  ListGpuSource none(Status(StatusCode::kFailedPrecondition, "cannot load NVML"));
  {
    Agent agent(Options(dir, true), none, store, store, kubelet);
    Status s = agent.Start();
    EXPECT_THAT(s.message(), HasSubstr("cannot load NVML"));
    EXPECT_THAT(s.message(), HasSubstr("node.fail-on-init-error=false"));
  }
  ListGpuSource empty(std::vector<GpuInfo>{});
  {
    Agent agent(Options(dir, true), empty, store, store, kubelet);
    EXPECT_THAT(agent.Start().message(), HasSubstr("no GPU"));
  }
  Agent agent(Options(dir, false), none, store, store, kubelet);
  EXPECT_TRUE(agent.Start().ok());
  EXPECT_TRUE(agent.board().Get().gpus.empty());
  agent.Stop();
}

TEST(AgentTest, KeepsARunningContainersPidsFile) {
  TempDir dir;
  MemoryPodStore store("n");
  FakeDeviceAssignments kubelet;
  ListGpuSource gpus(TestGpus(1));
  AgentOptions options = Options(dir, true);
  options.cgroup_root = dir.path() + "/cgroup";
  options.pid_refresh = std::chrono::milliseconds(50);
  MakeCgroupRoot(options.cgroup_root, CgroupVersion::kV2);
  Agent agent(options, gpus, store, store, kubelet);
  ASSERT_TRUE(agent.Start().ok());

  nlohmann::json pod = MakePod("p", "n", "nvidia.com/gpu", 1);
  store.Put(pod);
  auto a = agent.allocator().Allocate("nvidia.com/gpu", {"0-0"});
  ASSERT_TRUE(a.ok());
  kubelet.Add("uid-p", "main", "nvidia.com/gpu", {"0-0"}, a->allocation_id);
  ASSERT_TRUE(agent.allocator().PreStart("nvidia.com/gpu", {"0-0"}).ok());
  // The runtime starts the container; kubelet reports it.
  MakeContainerCgroup(options.cgroup_root, CgroupDriver::kCgroupfs, TestQos::kBestEffort, "uid-p",
                      "abc123", {::getpid()});
  pod["status"] = {
      {"phase", "Running"},
      {"qosClass", "BestEffort"},
      {"containerStatuses", {{{"name", "main"}, {"containerID", "containerd://abc123"}}}}};
  store.Put(pod);

  std::string file = agent.allocator().AllocationDir(a->allocation_id) + "/pids";
  std::string want =
      "version=1\n" + std::to_string(::getpid()) + " " + std::to_string(::getpid()) + "\n";
  std::string text;
  for (int i = 0; i < 100 && text != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream in(file);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(text, want);
  agent.Stop();
}

TEST(KubeletVersionTest, CdiNeedsKubelet129OrItsGate) {
  EXPECT_TRUE(CdiVersionWarning("v1.28.15", true));
  EXPECT_THAT(*CdiVersionWarning("v1.28.15", true), HasSubstr("node.cdi=false"));
  EXPECT_FALSE(CdiVersionWarning("v1.28.15", false));
  EXPECT_FALSE(CdiVersionWarning("v1.29.0", true));
  EXPECT_FALSE(CdiVersionWarning("v1.36.3", true));
  EXPECT_FALSE(CdiVersionWarning("", true));
}

TEST(ConfigKeysTest, DefaultsAndRefusals) {
  config::Schema schema;
  AddConfigKeys(schema);
  config::Config cfg(schema);
  auto o = OptionsFromConfig(cfg, "env-node");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->allocator.node_name, "env-node");
  EXPECT_EQ(o->kubelet_dir, "/var/lib/kubelet");
  EXPECT_EQ(o->allocator.cdi_dir, "/var/run/cdi");
  EXPECT_EQ(o->allocator.state_dir, "/var/lib/tessera");
  EXPECT_EQ(o->allocator.split_count, 10);
  EXPECT_TRUE(o->fail_on_init_error);
  EXPECT_EQ(o->pid_refresh, std::chrono::seconds(1));
  EXPECT_EQ(o->cgroup_root, "/sys/fs/cgroup");
  EXPECT_EQ(o->proc_root, "/proc");
  ASSERT_EQ(o->resources.size(), 4u);
  EXPECT_EQ(o->resources[2].name, "tencent.com/vcuda-memory");

  EXPECT_THAT(OptionsFromConfig(cfg, "").status().message(), HasSubstr("--node-name"));
  config::Source flag{config::Source::Kind::kFlag, "--x"};
  // Values that cannot work are refused as they are set (the schema's bounds).
  EXPECT_FALSE(cfg.Set("node.device-memory-scaling", "1.5", flag).ok());
  EXPECT_FALSE(cfg.Set("node.pid-refresh", "0s", flag).ok());
  ASSERT_TRUE(cfg.Set("node.pid-refresh", "250ms", flag).ok());
  EXPECT_EQ(OptionsFromConfig(cfg, "n")->pid_refresh, std::chrono::milliseconds(250));
  for (const char* d : {"vgpu", "vcuda", "gpushare"}) {
    ASSERT_TRUE(cfg.Set(std::string("node.dialects.") + d + ".enabled", "false", flag).ok());
  }
  EXPECT_THAT(OptionsFromConfig(cfg, "n").status().message(), HasSubstr("nothing to serve"));
}

}  // namespace
}  // namespace tessera::node
