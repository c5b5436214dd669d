#include "node/agent.h"
#include "node/kubelet/kubelet_version.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "annotations/names.h"
#include "config/config.h"
#include "config/loader.h"
#include "node/allocation/allocation_files.h"
#include "node/config_keys.h"
#include "node/containers/fake_cgroup_tree.h"
#include "node/metrics/test_region.h"
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
  EXPECT_EQ(doc["gpus"][1]["slots"], 10) << "the split count";
  EXPECT_EQ(store.NodeLabels()[annotations::kGpuNodeLabel], "true");
  EXPECT_EQ(doc["serving"], false) << "no kubelet here: no plugin is registered";
  agent.board().SetHealthy("GPU-1", false);
  EXPECT_TRUE(WaitForAnnotation(store, "\"healthy\":false"));
  agent.Stop();
}

// Issue 33: node.device-memory-scaling reaches every GPU the agent found: the inventory keeps the
// physical memory and says the scaling, and the board's GPUs (device plugins, slices, limits)
// carry it.
TEST(AgentTest, PublishesEachGpusMemoryScaling) {
  TempDir dir;
  MemoryPodStore store("n");
  FakeDeviceAssignments kubelet;
  ListGpuSource gpus(TestGpus(2, 24268));
  AgentOptions options = Options(dir, true);
  options.memory_scaling = 2;
  Agent agent(options, gpus, store, store, kubelet);
  ASSERT_TRUE(agent.Start().ok());
  ASSERT_TRUE(WaitForAnnotation(store, "\"memoryScaling\":2"));
  auto doc = nlohmann::json::parse(store.NodeAnnotations()[kGpusAnnotation]);
  EXPECT_EQ(doc["gpus"][0]["memoryMiB"], 24268);
  EXPECT_EQ(doc["gpus"][1]["memoryScaling"], 2.0);
  for (const GpuInfo& g : agent.board().Get().gpus) EXPECT_EQ(g.virtual_memory_mib(), 48536u);
  agent.Stop();
}

// Stopping (an upgrade's rollout, a node drain): the inventory first says that the node's devices
// are not served, so that the scheduler places no pod there while kubelet would fail it.
TEST(AgentTest, StopPublishesFirstThatTheDevicesAreNotServed) {
  TempDir dir;
  MemoryPodStore store("n");
  FakeDeviceAssignments kubelet;
  ListGpuSource gpus(TestGpus(1));
  Agent agent(Options(dir, true), gpus, store, store, kubelet);
  ASSERT_TRUE(agent.Start().ok());
  agent.board().SetServing(true);  // as when every plugin is registered
  ASSERT_TRUE(WaitForAnnotation(store, "\"serving\":true"));
  agent.Stop();
  auto doc = nlohmann::json::parse(store.NodeAnnotations()[kGpusAnnotation]);
  EXPECT_EQ(doc["serving"], false);
}

// A part that records its calls, for node.mode=dra.
class RecordingPart : public AgentPart {
 public:
  explicit RecordingPart(std::vector<std::string>& calls, std::string name, Status start = {})
      : calls_(calls), name_(std::move(name)), start_(std::move(start)) {}
  Status Start() override {
    calls_.push_back(name_ + ".Start");
    return start_;
  }
  void Stop() override { calls_.push_back(name_ + ".Stop"); }

 private:
  std::vector<std::string>& calls_;
  const std::string name_;
  const Status start_;
};

class NoClaims : public ClaimOwner {
 public:
  bool Holds(const std::string&) const override { return false; }
  std::vector<std::string> ReleaseAbandoned(std::chrono::seconds) override { return {}; }
};

TEST(AgentTest, DraModeStartsTheDraPartsInsteadOfDevicePlugins) {
  TempDir dir;
  MemoryPodStore store("n");
  FakeDeviceAssignments kubelet;
  ListGpuSource gpus(TestGpus(2));
  AgentOptions options = Options(dir, true);
  options.mode = NodeMode::kDra;
  std::vector<std::string> calls;
  RecordingPart plugin(calls, "plugin"), slices(calls, "slices");
  NoClaims claims;
  {
    Agent agent(options, gpus, store, store, kubelet);
    EXPECT_THAT(agent.Start().message(), HasSubstr("node.mode=dra but no DRA kubelet plugin"));
  }
  Agent agent(options, gpus, store, store, kubelet);
  agent.UseDra(plugin, claims, &slices);
  ASSERT_TRUE(agent.Start().ok());
  EXPECT_EQ(calls, (std::vector<std::string>{"plugin.Start", "slices.Start"}));
  ASSERT_TRUE(WaitForAnnotation(store, "\"uuid\":\"GPU-1\""));
  auto doc = nlohmann::json::parse(store.NodeAnnotations()[kGpusAnnotation]);
  EXPECT_EQ(doc["serving"], false) << "the extender's path must not place pods on DRA GPUs";
  EXPECT_TRUE(std::filesystem::is_empty(options.kubelet_dir + "/device-plugins"))
      << "no device plugin socket";
  EXPECT_EQ(agent.plugins().Registrations(), 0);
  agent.Stop();
  EXPECT_EQ(calls, (std::vector<std::string>{"plugin.Start", "slices.Start", "slices.Stop",
                                             "plugin.Stop"}));
  agent.Stop();  // once only
  EXPECT_EQ(calls.size(), 4u);
}

TEST(AgentTest, DraModeFailsWhenItsPartsCannotStart) {
  TempDir dir;
  MemoryPodStore store("n");
  FakeDeviceAssignments kubelet;
  ListGpuSource gpus(TestGpus(1));
  AgentOptions options = Options(dir, true);
  options.mode = NodeMode::kDra;
  std::vector<std::string> calls;
  RecordingPart plugin(calls, "plugin"), slices(calls, "slices", Unavailable("no API server"));
  NoClaims claims;
  Agent agent(options, gpus, store, store, kubelet);
  agent.UseDra(plugin, claims, &slices);
  EXPECT_EQ(agent.Start().message(), "no API server");
  EXPECT_EQ(calls, (std::vector<std::string>{"plugin.Start", "slices.Start", "slices.Stop",
                                             "plugin.Stop"}));
}

TEST(AgentTest, SignsTheInventoryForTheNodesUidWhenItHasKeys) {
  TempDir dir;
  FakeDeviceAssignments kubelet;
  ListGpuSource gpus(TestGpus(1));
  annotations::Signing keys(
      annotations::KeyRing::Parse("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "k").value());
  for (bool keyed : {false, true}) {
    MemoryPodStore store("n");
    AgentOptions options = Options(dir, true);
    if (keyed) options.allocator.signing = keys;
    options.node_uid = "node-uid";
    Agent agent(options, gpus, store, store, kubelet);
    ASSERT_TRUE(agent.Start().ok());
    ASSERT_TRUE(WaitForAnnotation(store, "\"uuid\":\"GPU-0\""));
    agent.Stop();
    nlohmann::json node = {
        {"metadata",
         {{"name", "n"}, {"uid", "node-uid"}, {"annotations", store.NodeAnnotations()}}}};
    EXPECT_EQ(store.NodeAnnotations().count(annotations::kGpusSignature), keyed ? 1u : 0u);
    EXPECT_EQ(keys.Check(node, kGpusAnnotation, "node n").ok(), keyed);
    node["metadata"]["uid"] = "another-node";
    EXPECT_FALSE(keys.Check(node, kGpusAnnotation, "node n").ok());
  }
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

// Pod `pod` (container main, uid-<name>) gets device 0-0 as kubelet would give it, and its
// container runs with process `pid` in a fake cgroup under `cgroup_root`. The allocation ID, or
// "" (with a test failure) when the agent refused it.
std::string StartContainer(Agent& agent, MemoryPodStore& store, FakeDeviceAssignments& kubelet,
                           const std::string& cgroup_root, nlohmann::json pod, pid_t pid) {
  store.Put(pod);
  auto a = agent.allocator().Allocate("nvidia.com/gpu", {"0-0"});
  EXPECT_TRUE(a.ok()) << a.status().message();
  if (!a.ok()) return "";
  const std::string uid = pod["metadata"]["uid"];
  kubelet.Add(uid, "main", "nvidia.com/gpu", {"0-0"}, a->allocation_id);
  Status started = agent.allocator().PreStart("nvidia.com/gpu", {"0-0"});
  EXPECT_TRUE(started.ok()) << started.message();
  // The runtime starts the container; kubelet reports it.
  MakeContainerCgroup(cgroup_root, CgroupDriver::kCgroupfs, TestQos::kBestEffort, uid, "abc123",
                      {pid});
  pod["status"] = {
      {"phase", "Running"},
      {"qosClass", "BestEffort"},
      {"containerStatuses", {{{"name", "main"}, {"containerID", "containerd://abc123"}}}}};
  store.Put(pod);
  return a->allocation_id;
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
  std::string id = StartContainer(agent, store, kubelet, options.cgroup_root,
                                  MakePod("p", "n", "nvidia.com/gpu", 1), ::getpid());
  ASSERT_FALSE(id.empty());

  std::string file = agent.allocator().AllocationDir(id) + "/pids";
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

// The host-side check end to end in the agent: a container whose process holds more than its
// limit (as the driver reports it) is killed and its pod gets a Warning event.
TEST(AgentTest, KillsAContainersProcessThatHoldsMoreThanItsLimit) {
  TempDir dir;
  MemoryPodStore store("n");
  FakeDeviceAssignments kubelet;
  ListGpuSource gpus(TestGpus(1));
  AgentOptions options = Options(dir, true);
  options.cgroup_root = dir.path() + "/cgroup";
  options.pid_refresh = std::chrono::milliseconds(20);
  options.memory_guard = {.action = GuardAction::kKill, .tolerance = 0, .strikes = 2};
  options.memory_guard_interval = std::chrono::milliseconds(20);
  MakeCgroupRoot(options.cgroup_root, CgroupVersion::kV2);
  pid_t hog = fork();
  if (hog == 0) {
    pause();
    _exit(0);
  }
  Agent agent(options, gpus, store, store, kubelet);
  std::atomic<uint64_t> held{512ull << 20};  // what the driver says `hog` holds
  agent.GuardMemory([&](const std::vector<GpuInfo>& all) {
    ProcessMemory memory;
    for (const GpuInfo& g : all) memory[g.uuid][static_cast<uint32_t>(hog)] = held.load();
    return memory;
  });
  ASSERT_TRUE(agent.Start().ok());
  ASSERT_FALSE(StartContainer(agent, store, kubelet, options.cgroup_root,
                              MakePod("p", "n", "nvidia.com/gpu", 1, {{"GPU-0", 1024, 0}}), hog)
                   .empty());

  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(store.Events().empty()) << "512 MiB of a 1024 MiB limit is not over";
  held.store(3072ull << 20);  // the region was lifted, or the library bypassed
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 200 && !ended; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ended = waitpid(hog, &status, WNOHANG) == hog;
  }
  if (!ended) kill(hog, SIGKILL), waitpid(hog, nullptr, 0);
  ASSERT_TRUE(ended) << "the process over its container's limit was not killed";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ASSERT_FALSE(store.Events().empty());
  EXPECT_THAT(store.Events()[0],
              HasSubstr("default/p Warning GPUMemoryOverLimit: container main holds 3072 MiB of "
                        "GPU GPU-0, over its limit of 1024 MiB"));
  EXPECT_THAT(store.Events()[0], HasSubstr("killed host PIDs: " + std::to_string(hog)));
  EXPECT_EQ(agent.memory_guard()->kills(), 1u);
  agent.Stop();
}

// Issue 33: the agent's housekeeping reads each container's region and records its first spill
// on the pod once.
TEST(AgentTest, RecordsAContainersFirstSpillOnItsPod) {
  TempDir dir;
  MemoryPodStore store("n");
  FakeDeviceAssignments kubelet;
  ListGpuSource gpus(TestGpus(1));
  AgentOptions options = Options(dir, true);
  options.cgroup_root = dir.path() + "/cgroup";
  options.memory_guard_on = false;
  options.spill_check_interval = std::chrono::milliseconds(20);
  options.memory_scaling = 2;  // only a scaled node's containers can spill
  MakeCgroupRoot(options.cgroup_root, CgroupVersion::kV2);
  Agent agent(options, gpus, store, store, kubelet);
  ASSERT_TRUE(agent.Start().ok());
  std::string id =
      StartContainer(agent, store, kubelet, options.cgroup_root,
                     MakePod("p", "n", "nvidia.com/gpu", 1, {{"GPU-0", 1024, 0}}), ::getpid());
  ASSERT_FALSE(id.empty());
  const std::string region_dir = RegionDirOf(options.allocator.state_dir, id);
  ASSERT_TRUE(MakeDirs(region_dir).ok());
  TestRegion region(region_dir + "/region", 1024ull << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(store.Events().empty()) << "nothing spilled yet";
  region.Spill(0, 256ull << 20);
  for (int i = 0; i < 100 && store.Events().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // more checks: no second event
  ASSERT_EQ(store.Events().size(), 1u);
  EXPECT_THAT(store.Events()[0],
              HasSubstr("default/p Warning GPUMemorySpilled: container main has GPU memory "
                        "served from host memory, 256 MiB on GPU 0 (GPU-0)"));
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
  EXPECT_EQ(o->mode, NodeMode::kDevicePlugin);

  EXPECT_THAT(OptionsFromConfig(cfg, "").status().message(), HasSubstr("--node-name"));
  config::Source flag{config::Source::Kind::kFlag, "--x"};
  // Values that cannot work are refused as they are set (the schema's bounds).
  EXPECT_FALSE(cfg.Set("node.pid-refresh", "0s", flag).ok());
  ASSERT_TRUE(cfg.Set("node.pid-refresh", "250ms", flag).ok());
  EXPECT_EQ(OptionsFromConfig(cfg, "n")->pid_refresh, std::chrono::milliseconds(250));
  for (const char* d : {"vgpu", "vcuda", "gpushare"}) {
    ASSERT_TRUE(cfg.Set(std::string("node.dialects.") + d + ".enabled", "false", flag).ok());
  }
  EXPECT_THAT(OptionsFromConfig(cfg, "n").status().message(), HasSubstr("nothing to serve"));
}

// Issue 33: 1 to 10, the GPUs' virtual memory as a multiple of the physical; outside that the
// refusal names the range, at load (so --print-config refuses it too) and in OptionsFromConfig.
TEST(ConfigKeysTest, MemoryScalingIsOneToTen) {
  config::Schema schema;
  AddConfigKeys(schema);
  for (const char* good : {"1", "1.5", "2", "10"}) {
    Result<config::Loaded> loaded =
        config::Load(schema, {std::string("--node.device-memory-scaling=") + good}, {});
    ASSERT_TRUE(loaded.ok()) << good << ": " << loaded.status().message();
    Result<AgentOptions> o = OptionsFromConfig(loaded->config, "n");
    ASSERT_TRUE(o.ok()) << o.status().message();
    EXPECT_DOUBLE_EQ(o->memory_scaling, std::stod(good));
  }
  for (const char* bad : {"0.5", "0", "10.5", "-2"}) {
    Result<config::Loaded> loaded =
        config::Load(schema, {}, {{"TESSERA_NODE_DEVICE_MEMORY_SCALING", bad}});
    ASSERT_FALSE(loaded.ok()) << bad;
    EXPECT_EQ(loaded.status().message(),
              std::string("invalid value for node.device-memory-scaling \"") + bad +
                  "\" (env TESSERA_NODE_DEVICE_MEMORY_SCALING): expected a value from 1 to 10 "
                  "(the GPUs' virtual memory as a multiple of their physical memory)");
  }
  config::Config cfg(schema);
  ASSERT_TRUE(
      cfg.Set("node.device-memory-scaling", "11", {config::Source::Kind::kFlag, "--x"}).ok());
  EXPECT_THAT(OptionsFromConfig(cfg, "n").status().message(),
              HasSubstr("expected a value from 1 to 10"));
}

TEST(ConfigKeysTest, ModeIsDevicePluginOrDra) {
  config::Schema schema;
  AddConfigKeys(schema);
  config::Config cfg(schema);
  config::Source flag{config::Source::Kind::kFlag, "--mode"};
  Status bad = cfg.Set("node.mode", "kubelet-plugin", flag);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("one of device-plugin, dra"));
  ASSERT_TRUE(cfg.Set("node.mode", "dra", flag).ok());
  EXPECT_EQ(OptionsFromConfig(cfg, "n")->mode, NodeMode::kDra);
}

TEST(ConfigKeysTest, AnnotationKeyFileIsReadOrRefusedNamingIt) {
  TempDir dir;
  config::Schema schema;
  AddConfigKeys(schema);
  config::Config cfg(schema);
  EXPECT_FALSE(OptionsFromConfig(cfg, "n")->allocator.signing.enabled());
  config::Source flag{config::Source::Kind::kFlag, "--node.annotation-key-file"};
  const std::string file = dir.path() + "/key";
  ASSERT_TRUE(cfg.Set("node.annotation-key-file", file, flag).ok());
  EXPECT_EQ(OptionsFromConfig(cfg, "n").status().message(),
            "cannot read the annotation key file " + file + ": No such file or directory");
  std::ofstream(file) << "# first key signs\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n";
  Result<AgentOptions> o = OptionsFromConfig(cfg, "n");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->allocator.signing.keys()->signing_key_id(), "630dcd29");
}

}  // namespace
}  // namespace tessera::node
