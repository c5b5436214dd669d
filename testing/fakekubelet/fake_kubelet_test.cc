// The node agent's device plugins against the fake kubelet, over unix sockets in a per-test folder:
// registration, options, ListAndWatch contents and sizes, re-registration after a kubelet
// restart, health, and admission of many pods of mixed dialects in shuffled order.
#include <algorithm>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakekubelet/admitter.h"
#include "fakekubelet/device_checkpoint.h"
#include "fakekubelet/registry.h"
#include "node/allocation/allocator.h"
#include "node/gpu/device_board.h"
#include "node/kubelet/plugin_manager.h"
#include "node/pods/memory_pod_store.h"
#include "node/test_support.h"

namespace tessera::fakekubelet {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
using node::testing::MakePod;
using node::testing::TestDevice;

const std::string kNode = "node-1";
const std::vector<node::ResourceSpec> kResources = {
    {"nvidia.com/gpu", node::ResourceKind::kVgpuSlots},
    {"tencent.com/vcuda-core", node::ResourceKind::kVcudaCore},
    {"tencent.com/vcuda-memory", node::ResourceKind::kVcudaMemory},
    {"aliyun.com/gpu-mem", node::ResourceKind::kGpuMemGiB},
};

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FakeKubeletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gpus_ = node::testing::TestGpus(8, 141 * 1024);
    board_.Set(gpus_);
    ASSERT_TRUE(registry_.Start().ok());
    ASSERT_TRUE(checkpoint_.Start().ok());
    node::AllocatorOptions opts;
    opts.node_name = kNode;
    opts.state_dir = dir_.path() + "/state";
    opts.cdi_dir = dir_.path() + "/cdi";
    allocator_ = std::make_unique<node::Allocator>(opts, kResources, store_, recorder_, kubelet_);
    ASSERT_TRUE(allocator_->Init().ok());
    allocator_->SetGpus(gpus_);
    manager_ = std::make_unique<node::PluginManager>(registry_.PluginDir(), kResources, 10,
                                                     *allocator_, board_, [this](bool registered) {
                                                       std::lock_guard<std::mutex> lock(mu_);
                                                       registered_.push_back(registered);
                                                     });
    ASSERT_TRUE(manager_->Start().ok());
    for (const auto& r : kResources) {
      ASSERT_TRUE(registry_.WaitFor(
          r.name, [](const PluginState& p) { return p.messages > 0; }, 10s))
          << r.name;
    }
  }
  void TearDown() override {
    manager_->Stop();
    registry_.Stop();
  }

  node::testing::TempDir dir_;
  std::vector<node::GpuInfo> gpus_;
  node::DeviceBoard board_;
  FakeKubeletRegistry registry_{dir_.path()};
  FakeDeviceCheckpoint checkpoint_{dir_.path()};
  node::KubeletCheckpoint kubelet_{checkpoint_.Path(), dir_.path() + "/state/allocations"};
  node::MemoryPodStore store_{kNode};
  node::AllocationRecorder recorder_{store_, store_};
  std::unique_ptr<node::Allocator> allocator_;
  std::unique_ptr<node::PluginManager> manager_;
  std::mutex mu_;
  std::vector<bool> registered_;  // what the manager told, in order; guarded by mu_

  std::vector<bool> Registered() {
    std::lock_guard<std::mutex> lock(mu_);
    return registered_;
  }
};

// The agent publishes this as its inventory's "serving": while a plugin is not registered,
// kubelet fails the pods that need its devices, so the scheduler must place none there.
TEST_F(FakeKubeletTest, TellsWhetherEveryPluginIsRegisteredAcrossAKubeletRestartAndStop) {
  EXPECT_EQ(Registered(), std::vector<bool>{true}) << "registered at Start";
  registry_.RefuseRegistrations(1);
  ASSERT_TRUE(registry_.Recreate().ok());
  for (const auto& r : kResources) {
    ASSERT_TRUE(registry_.WaitFor(
        r.name, [](const PluginState& p) { return p.registrations == 2 && p.stream_open; }, 5s))
        << r.name;
  }
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (Registered().size() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(Registered(), (std::vector<bool>{true, false, true}))
      << "not registered from kubelet's restart until every plugin registered again";
  manager_->Stop();
  EXPECT_EQ(Registered(), (std::vector<bool>{true, false, true, false}));
}

TEST_F(FakeKubeletTest, RegistersEveryResourceWithOptionsAndSmallMessages) {
  const std::map<std::string, size_t> expected = {{"nvidia.com/gpu", 80},
                                                  {"tencent.com/vcuda-core", 800},
                                                  {"tencent.com/vcuda-memory", 8 * 564},
                                                  {"aliyun.com/gpu-mem", 8 * 141}};
  for (const auto& [resource, count] : expected) {
    auto state = registry_.State(resource);
    ASSERT_TRUE(state.ok());
    EXPECT_EQ(state->registrations, 1);
    EXPECT_TRUE(state->options.pre_start_required());
    EXPECT_TRUE(state->options.get_preferred_allocation_available());
    EXPECT_EQ(state->devices.size(), count) << resource;
    EXPECT_LT(state->last_message_bytes, 1u << 20) << resource;
    RecordProperty(resource + "_bytes", std::to_string(state->last_message_bytes));
    EXPECT_EQ(state->devices[0].health(), "Healthy");
    EXPECT_EQ(state->devices.back().topology().nodes(0).id(), 1);  // GPU 7 is on NUMA node 1
  }
}

TEST_F(FakeKubeletTest, TriesAgainWhenTheRestartedKubeletRefusesTheFirstRegistration) {
  // A real kubelet creates kubelet.sock before it listens on it: the first Register after the
  // watch's event can fail, and no second event comes.
  registry_.RefuseRegistrations(static_cast<int>(kResources.size()));
  ASSERT_TRUE(registry_.Recreate().ok());
  for (const auto& r : kResources) {
    EXPECT_TRUE(registry_.WaitFor(
        r.name, [](const PluginState& p) { return p.registrations == 2 && p.stream_open; }, 5s))
        << r.name;
  }
}

TEST_F(FakeKubeletTest, RegistersAgainWithinTwoSecondsOfAKubeletRestart) {
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(registry_.Recreate().ok());
  for (const auto& r : kResources) {
    EXPECT_TRUE(registry_.WaitFor(
        r.name, [](const PluginState& p) { return p.registrations == 2 && p.stream_open; }, 2s))
        << r.name;
  }
  auto took = std::chrono::steady_clock::now() - start;
  RecordProperty(
      "reregister_ms",
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  // The new sockets serve.
  auto stub = registry_.Plugin("nvidia.com/gpu");
  ASSERT_TRUE(stub.ok());
  grpc::ClientContext ctx;
  v1beta1::DevicePluginOptions options;
  EXPECT_TRUE((*stub)->GetDevicePluginOptions(&ctx, v1beta1::Empty(), &options).ok());
}

TEST_F(FakeKubeletTest, HealthChangesReachListAndWatchWithinOneSecond) {
  auto unhealthy_on_3 = [](const PluginState& p) {
    return std::any_of(p.devices.begin(), p.devices.end(), [](const v1beta1::Device& d) {
      return d.id().rfind("3-", 0) == 0 && d.health() == "Unhealthy";
    });
  };
  ASSERT_TRUE(board_.SetHealthy("GPU-3", false));
  for (const auto& r : kResources) EXPECT_TRUE(registry_.WaitFor(r.name, unhealthy_on_3, 1s));
  ASSERT_TRUE(board_.SetHealthy("GPU-3", true));
  for (const auto& r : kResources) {
    EXPECT_TRUE(registry_.WaitFor(
        r.name, [&](const PluginState& p) { return !unhealthy_on_3(p); }, 1s));
  }
}

TEST_F(FakeKubeletTest, TwentyPodsOfMixedDialectsGetExactlyTheirDecisions) {
  struct Case {
    nlohmann::json pod;
    std::string expect;  // a substring of the container's limits file
  };
  std::vector<Case> cases;
  for (int i = 0; i < 20; ++i) {
    std::string name = "p" + std::to_string(i);
    std::string uuid = "GPU-" + std::to_string(i % 8);
    uint64_t mib = 1024 * static_cast<uint64_t>(1 + i);
    int cores = 5 + i;
    nlohmann::json pod;
    switch (i % 4) {
      case 0:
        pod = MakePod(name, kNode, "nvidia.com/gpu", 1, {{uuid, mib, cores}});
        break;
      case 1:
        pod = MakePod(name, kNode, "tencent.com/vcuda-core", cores, {{uuid, mib, cores}});
        pod["spec"]["containers"][0]["resources"]["limits"]["tencent.com/vcuda-memory"] =
            std::to_string(mib / 256);
        break;
      case 2:
        pod = MakePod(name, kNode, "aliyun.com/gpu-mem", static_cast<int64_t>(mib / 1024),
                      {{uuid, mib, 0}});
        break;
      case 3:
        pod = MakePod(name, kNode, "nvidia.com/gpu", 2,
                      {{uuid, mib, cores}, {"GPU-" + std::to_string((i + 1) % 8), mib, cores}});
        break;
    }
    store_.Put(pod);
    cases.push_back({pod, "uuid.0=" + uuid + "\nmemory.0=" + std::to_string(mib << 20) + "\n"});
  }
  std::mt19937 rng(7);
  std::shuffle(cases.begin(), cases.end(), rng);
  Admitter admitter(registry_, checkpoint_);
  std::vector<std::thread> starts;
  std::vector<std::string> results(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    auto allocated = admitter.Allocate(cases[i].pod);
    ASSERT_TRUE(allocated.ok()) << allocated.status().ToString();
    // Containers of different pods start in parallel, as kubelet does.
    starts.emplace_back([&, i, start = (*allocated)[0]] {
      Status s = admitter.PreStart(cases[i].pod, start.container);
      if (!s.ok()) {
        results[i] = "prestart: " + s.ToString();
        return;
      }
      auto run = Admitter::Run(start, "cat \"$TESSERA_LIMITS_FILE\"", 30);
      results[i] = run.ok() ? run->output : run.status().ToString();
    });
  }
  for (auto& t : starts) t.join();
  ASSERT_TRUE(recorder_.Flush());
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string name = cases[i].pod["metadata"]["name"];
    EXPECT_THAT(results[i], HasSubstr(cases[i].expect)) << name;
    auto pod = store_.Pod("default", name);
    EXPECT_THAT(node::PodAnnotation(*pod, node::kAllocatedAnnotation), HasSubstr("main")) << name;
  }
}

TEST_F(FakeKubeletTest, IsolatedContainerSeesItsLimitsAtTheContainerPath) {
  auto pod = MakePod("iso", kNode, "aliyun.com/gpu-mem", 2, {{"GPU-5", 2048, 0}});
  store_.Put(pod);
  Admitter admitter(registry_, checkpoint_);
  auto admitted = admitter.Admit(pod);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  auto run = Admitter::Run((*admitted)[0],
                           "cat /var/run/tessera/limits && ls -d /var/run/tessera-region", 30,
                           /*isolate=*/true);
  ASSERT_TRUE(run.ok());
  if (run->output.find("no private mount namespace") != std::string::npos) {
    GTEST_SKIP() << "this machine does not allow a private mount namespace";
  }
  EXPECT_EQ(run->exit_code, 0) << run->output;
  EXPECT_THAT(run->output, HasSubstr("uuid.0=GPU-5\nmemory.0=2147483648\n"));
}

TEST_F(FakeKubeletTest, ImpossibleDecisionFailsTheStartWithTheNamedError) {
  auto pod = MakePod("ghost", kNode, "nvidia.com/gpu", 1, {{"GPU-missing", 1024, 10}});
  store_.Put(pod);
  Admitter admitter(registry_, checkpoint_);
  auto admitted = admitter.Admit(pod);
  ASSERT_FALSE(admitted.ok());
  EXPECT_THAT(admitted.status().message(), HasSubstr("pod default/ghost container main"));
  EXPECT_THAT(admitted.status().message(), HasSubstr("GPU-missing is not on this node"));
}

TEST_F(FakeKubeletTest, PodWithoutDecisionGetsWholeGpus) {
  auto pod = MakePod("plain", kNode, "nvidia.com/gpu", 2);
  store_.Put(pod);
  Admitter admitter(registry_, checkpoint_);
  auto admitted = admitter.Admit(pod);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  std::string limits = Read((*admitted)[0].limits_file);
  EXPECT_THAT(limits, HasSubstr("devices=2\n"));
  EXPECT_THAT(limits, HasSubstr("memory.0=0\ncores.0=0\n"));
  EXPECT_THAT(limits, HasSubstr("memory.1=0\ncores.1=0\n"));
}

}  // namespace
}  // namespace tessera::fakekubelet
