// The node side of MIG on simgpu's NVML (two H100s and a GPU without MIG): discovery, fixed
// layouts applied around instances in use, dynamic create and destroy, and what the agent
// publishes and hands to containers for a MIG device.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "annotations/inventory.h"
#include "node/allocation/allocation_files.h"
#include "node/gpu/inventory.h"
#include "node/gpu/nvml_gpu_source.h"
#include "node/metrics/metrics.h"
#include "node/mig/mig_manager.h"
#include "node/test_support.h"

namespace tessera::node {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class MigNodeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    state_ = new testing::TempDir();
    ::setenv("SIMGPU_STATE", state_->path().c_str(), 1);
    ::setenv("SIMGPU_DEVICES", "gpu=H100;gpu=H100;gpu=SimGPU:16GiB:108", 1);
  }
  static void TearDownTestSuite() { delete state_; }
  static std::string BuildDir() {
    const char* b = std::getenv("TESSERA_BUILD_DIR");
    return b ? b : "build";
  }
  static int Simgpu(const std::string& args) {
    return std::system((BuildDir() + "/bin/simgpu " + args + " >/dev/null 2>&1").c_str());
  }
  void SetUp() override {
    ASSERT_EQ(Simgpu("reset"), 0);
    minors_file_ = state_->path() + "/mig-minors";
    ASSERT_EQ(std::system((BuildDir() + "/bin/simgpu mig-minors >" + minors_file_).c_str()), 0);
    Result<MigMinors> minors = ReadMigMinors(minors_file_);
    ASSERT_TRUE(minors.ok()) << minors.status().message();
    auto lib = NvmlLibrary::Open(BuildDir() + "/lib/simgpu/libnvidia-ml.so.1");
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    nvml_ = std::move(*lib);
    manager_ = std::make_unique<MigManager>(*nvml_, *minors);
  }
  void TearDown() override {
    for (pid_t pid : loads_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  std::vector<GpuInfo> Discover(const std::string& mode = "none", const std::string& layout = "",
                                const std::string& gpus = "") {
    Result<MigConfig> config = ParseMigConfig(mode, layout, gpus);
    EXPECT_TRUE(config.ok()) << config.status().message();
    config->minors_file = minors_file_;
    Result<std::vector<GpuInfo>> found = NvmlGpuSource(*nvml_, "/sys", *config).Discover();
    EXPECT_TRUE(found.ok()) << found.status().message();
    return found.ok() ? *found : std::vector<GpuInfo>{};
  }
  // Turns MIG on for GPU `index` (no process uses it) and returns the GPUs as they are then.
  std::vector<GpuInfo> EnableMig(int index) {
    std::vector<GpuInfo> gpus = Discover();
    Result<MigApplyResult> r = manager_->EnsureMigMode(gpus[index], {});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return Discover();
  }
  static std::vector<std::string> Placements(const GpuInfo& gpu) {
    std::vector<std::string> out;
    for (const MigInstanceInfo& m : gpu.mig.instances) {
      out.push_back(m.profile + "@" + std::to_string(m.start));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Starts compute_load on `visible` (a GPU index or a MIG UUID) for 30 s and waits until the
  // driver lists a process on GPU `gpu`; its PID.
  pid_t StartLoad(const std::string& visible, int gpu) {
    std::string program = BuildDir() + "/tests/compute_load";
    // Its start: CLOCK_MONOTONIC ms, now.
    std::string start = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now().time_since_epoch())
                                           .count());
    std::vector<char*> args = {program.data(),
                               const_cast<char*>("kernel"),
                               const_cast<char*>("2000"),
                               const_cast<char*>("1"),
                               start.data(),
                               const_cast<char*>("30"),
                               nullptr};
    std::string library_path = "LD_LIBRARY_PATH=" + BuildDir() + "/lib/simgpu";
    std::string cuda = "CUDA_VISIBLE_DEVICES=" + visible;
    std::vector<char*> env = {library_path.data(), cuda.data()};
    for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
    env.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, program.c_str(), nullptr, nullptr, args.data(), env.data()) != 0) {
      return -1;
    }
    loads_.push_back(pid);
    nvmlDevice_t dev = nullptr;
    nvml_->DeviceGetHandleByIndex(static_cast<unsigned>(gpu), &dev);
    for (int i = 0; i < 200; ++i) {
      nvmlProcessInfo_t procs[16];
      unsigned n = 16;
      if (nvml_->DeviceGetComputeRunningProcesses(dev, &n, procs) == NVML_SUCCESS) {
        for (unsigned k = 0; k < n; ++k) {
          if (procs[k].pid == static_cast<unsigned>(pid)) return pid;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ADD_FAILURE() << "compute_load on " << visible << " never showed in the driver's process list";
    return pid;
  }

  static testing::TempDir* state_;
  std::string minors_file_;
  std::unique_ptr<NvmlLibrary> nvml_;
  std::unique_ptr<MigManager> manager_;
  std::vector<pid_t> loads_;
};
testing::TempDir* MigNodeTest::state_ = nullptr;

TEST_F(MigNodeTest, DiscoversTheMigModeOfEachGpu) {
  std::vector<GpuInfo> gpus = Discover("none", "", "1=dynamic");
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_TRUE(gpus[0].mig.capable);
  EXPECT_FALSE(gpus[0].mig.enabled);
  EXPECT_FALSE(gpus[0].mig.pending);
  EXPECT_EQ(gpus[0].mig.mode, MigMode::kNone);
  EXPECT_EQ(gpus[1].mig.mode, MigMode::kDynamic);
  EXPECT_FALSE(gpus[2].mig.capable);  // the plain GPU
  EXPECT_TRUE(gpus[0].mig.instances.empty());
}

TEST_F(MigNodeTest, FixedLayoutIsAppliedAndDiscoveredWithEveryFact) {
  std::vector<GpuInfo> gpus = Discover("fixed", "1g.10gb=2,2g.20gb,3g.40gb", "1=none;2=none");
  Result<MigConfig> config = ParseMigConfig("fixed", "1g.10gb=2,2g.20gb,3g.40gb", "1=none;2=none");
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(ApplyMigConfig(*manager_, *config, gpus, {}).ok());
  gpus = Discover("fixed", "1g.10gb=2,2g.20gb,3g.40gb", "1=none;2=none");
  const GpuInfo& h100 = gpus[0];
  EXPECT_TRUE(h100.mig.enabled);
  EXPECT_TRUE(h100.mig.pending);
  EXPECT_EQ(h100.mig.mode, MigMode::kFixed);
  EXPECT_THAT(Placements(h100), ElementsAre("1g.10gb@2", "1g.10gb@3", "2g.20gb@0", "3g.40gb@4"));
  for (const MigInstanceInfo& m : h100.mig.instances) {
    EXPECT_THAT(m.uuid, StartsWith("MIG-"));
    EXPECT_TRUE(m.healthy);
    EXPECT_EQ(m.device_name, m.profile);
    ASSERT_EQ(m.caps_paths.size(), 2u) << m.uuid;
    EXPECT_THAT(m.caps_paths[0], StartsWith("/dev/nvidia-caps/nvidia-cap"));
    if (m.profile == "3g.40gb") {
      EXPECT_EQ(m.memory_mib, 40448u);
      EXPECT_EQ(m.sms, 60);
      EXPECT_EQ(m.size, 4);
      // The minors table: gpu0/gi2 (the half at slice 4) is 3 + 2 x 9 = 21, its ci0 22.
      EXPECT_THAT(m.caps_paths,
                  ElementsAre("/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"));
    }
    if (m.profile == "1g.10gb") {
      EXPECT_EQ(m.memory_mib, 9984u);
      EXPECT_EQ(m.sms, 16);
      EXPECT_EQ(m.size, 1);
    }
  }
  EXPECT_FALSE(gpus[1].mig.enabled);  // mode none: left as it was
  // Applied again: nothing to do.
  Result<MigApplyResult> again = manager_->ApplyFixed(h100, config->For(h100), {});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->done.empty());
  EXPECT_TRUE(again->complete());
}

TEST_F(MigNodeTest, ANewLayoutLeavesInstancesInUseAlone) {
  std::vector<GpuInfo> gpus = EnableMig(0);
  Result<MigConfig> first = ParseMigConfig("fixed", "3g.40gb@0,1g.10gb@4,1g.10gb@5", "");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(manager_->ApplyFixed(gpus[0], first->all, {}).ok());
  gpus = Discover();
  ASSERT_THAT(Placements(gpus[0]), ElementsAre("1g.10gb@4", "1g.10gb@5", "3g.40gb@0"));
  std::string at4, at5;
  for (const MigInstanceInfo& m : gpus[0].mig.instances) {
    if (m.start == 4) at4 = m.uuid;
    if (m.start == 5) at5 = m.uuid;
  }
  // A process runs on the 1g at 4; a container's allocation names the 1g at 5.
  const pid_t pid = StartLoad(at4, 0);
  ASSERT_GT(pid, 0);
  Result<MigConfig> second = ParseMigConfig("fixed", "4g.40gb,3g.40gb", "");
  ASSERT_TRUE(second.ok());
  Result<MigApplyResult> r = manager_->ApplyFixed(gpus[0], second->all, {at5});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->complete());
  // The 3g at 0 went (the layout's 4g takes slices 0-3); the 3g the layout wants at 4 cannot be
  // made while the 1g instances in use hold slices 4 and 5.
  EXPECT_THAT(r->done,
              ElementsAre(HasSubstr("destroyed 3g.40gb@0"), HasSubstr("created 4g.40gb@0")));
  ASSERT_EQ(r->left.size(), 3u);
  EXPECT_THAT(r->left[0],
              HasSubstr("1g.10gb@4 (" + at4 + ") is not in the layout \"4g.40gb,3g.40gb\""));
  EXPECT_THAT(r->left[0], HasSubstr("but PID " + std::to_string(pid) + " uses it: left alone"));
  EXPECT_THAT(r->left[1], HasSubstr("but a container's allocation (" + at5 + ") uses it"));
  EXPECT_THAT(r->left[2], HasSubstr("cannot create 3g.40gb@4"));
  gpus = Discover();
  EXPECT_THAT(Placements(gpus[0]), ElementsAre("1g.10gb@4", "1g.10gb@5", "4g.40gb@0"));
  // Once they are free, the layout is completed.
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  loads_.clear();
  r = manager_->ApplyFixed(gpus[0], second->all, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->complete()) << ::testing::PrintToString(r->left);
  EXPECT_THAT(Placements(Discover()[0]), ElementsAre("3g.40gb@4", "4g.40gb@0"));
}

TEST_F(MigNodeTest, CountedLayoutsKeepInstancesWhereTheyAre) {
  std::vector<GpuInfo> gpus = EnableMig(0);
  ASSERT_TRUE(manager_->Create(gpus[0], "1g.10gb", 0).ok());
  Result<MigConfig> c = ParseMigConfig("fixed", "1g.10gb=2,2g.20gb,3g.40gb", "");
  ASSERT_TRUE(c.ok());
  Result<MigApplyResult> r = manager_->ApplyFixed(Discover()[0], c->all, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const std::string& line : r->done) EXPECT_THAT(line, Not(HasSubstr("destroyed")));
  EXPECT_THAT(Placements(Discover()[0]),
              ElementsAre("1g.10gb@0", "1g.10gb@1", "2g.20gb@2", "3g.40gb@4"));
}

TEST_F(MigNodeTest, MigModeThatCannotTakeEffectSaysHowToReset) {
  const pid_t pid = StartLoad("1", 1);  // GPU 1 busy: the mode stays pending
  ASSERT_GT(pid, 0);
  std::vector<GpuInfo> gpus = Discover();
  Result<MigApplyResult> r = manager_->EnsureMigMode(gpus[1], {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->reset_needed);
  ASSERT_EQ(r->left.size(), 1u);
  EXPECT_THAT(r->left[0], HasSubstr("nvidia-smi --gpu-reset -i 1; on simgpu: simgpu reset-gpu 1"));
  gpus = Discover();
  EXPECT_FALSE(gpus[1].mig.enabled);
  EXPECT_TRUE(gpus[1].mig.pending);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  loads_.clear();
  ASSERT_EQ(Simgpu("reset-gpu 1"), 0);
  EXPECT_TRUE(Discover()[1].mig.enabled);
  // The plain GPU has no MIG at all.
  EXPECT_EQ(manager_->EnsureMigMode(gpus[2], {}).status().code(), StatusCode::kFailedPrecondition);
}

// A container's allocation naming the GPU itself (a share, with no process right now) keeps
// MIG mode off: in MIG mode the GPU would be no CUDA device and the share would stop working.
TEST_F(MigNodeTest, AGpuGivenToAnAllocationIsNotTurnedToMig) {
  std::vector<GpuInfo> gpus = Discover("fixed", "7g.80gb", "1=none;2=none");
  Result<MigApplyResult> r = manager_->EnsureMigMode(gpus[0], {gpus[0].uuid});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->complete());
  EXPECT_THAT(r->left, ElementsAre(HasSubstr("GPU 0 is given to a container's allocation: MIG "
                                             "mode not turned on until it is free")));
  Result<MigConfig> config = ParseMigConfig("fixed", "7g.80gb", "1=none;2=none");
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(ApplyMigConfig(*manager_, *config, gpus, {gpus[0].uuid}).ok());
  gpus = Discover();
  EXPECT_FALSE(gpus[0].mig.enabled);
  EXPECT_FALSE(gpus[0].mig.pending);
  EXPECT_TRUE(gpus[0].mig.instances.empty());
}

// A process that starts on an instance after the in-use check makes the driver refuse to destroy
// it (NVML_ERROR_IN_USE): the instance is left alone, reported, and the apply goes on.
TEST_F(MigNodeTest, AnInstanceTheDriverFindsInUseWhenDestroyingItIsLeftAlone) {
  std::vector<GpuInfo> gpus = EnableMig(0);
  Result<MigInstanceInfo> m = manager_->Create(gpus[0], "1g.10gb", 4);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_GT(StartLoad(m->uuid, 0), 0);
  // The process list the check reads is taken before the process started.
  nvml_->DeviceGetComputeRunningProcesses = [](nvmlDevice_t, unsigned* count, nvmlProcessInfo_t*) {
    *count = 0;
    return NVML_SUCCESS;
  };
  Result<MigConfig> c = ParseMigConfig("fixed", "7g.80gb", "");
  ASSERT_TRUE(c.ok());
  Result<MigApplyResult> r = manager_->ApplyFixed(Discover()[0], c->all, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->left.size(), 2u) << ::testing::PrintToString(r->left);
  EXPECT_THAT(r->left[0], HasSubstr("1g.10gb@4 (" + m->uuid + ") is not in the layout"));
  EXPECT_THAT(r->left[0], HasSubstr("the driver found a process on it when destroying it"));
  EXPECT_THAT(r->left[1], HasSubstr("cannot create 7g.80gb@0"));
  EXPECT_THAT(Placements(Discover()[0]), ElementsAre("1g.10gb@4"));
}

// A driver that does not offer one of the model's profiles still shows the instances of the others.
const mig::GpuInstanceProfile* unoffered = nullptr;
decltype(&nvmlDeviceGetGpuInstanceProfileInfo) real_profile_info = nullptr;
decltype(&nvmlDeviceGetGpuInstances) real_gpu_instances = nullptr;

TEST_F(MigNodeTest, AProfileTheDriverDoesNotOfferIsSkipped) {
  std::vector<GpuInfo> gpus = EnableMig(0);
  ASSERT_TRUE(manager_->Create(gpus[0], "1g.10gb", 0).ok());
  Result<const mig::GpuInstanceProfile*> p =
      mig::FindProfile(*mig::FindModel(gpus[0].model), "7g.80gb");
  ASSERT_TRUE(p.ok()) << p.status().message();
  unoffered = *p;
  real_profile_info = nvml_->DeviceGetGpuInstanceProfileInfo;
  real_gpu_instances = nvml_->DeviceGetGpuInstances;
  nvml_->DeviceGetGpuInstanceProfileInfo = [](nvmlDevice_t dev, unsigned profile,
                                              nvmlGpuInstanceProfileInfo_t* info) {
    if (profile == static_cast<unsigned>(unoffered->nvml_profile)) return NVML_ERROR_NOT_SUPPORTED;
    return real_profile_info(dev, profile, info);
  };
  nvml_->DeviceGetGpuInstances = [](nvmlDevice_t dev, unsigned id, nvmlGpuInstance_t* gis,
                                    unsigned* count) {
    if (id == static_cast<unsigned>(unoffered->profile_id)) return NVML_ERROR_INVALID_ARGUMENT;
    return real_gpu_instances(dev, id, gis, count);
  };
  Result<mig::Layout> layout = manager_->CurrentLayout(gpus[0]);
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(layout->ToString(), "1g.10gb@0");
}

TEST_F(MigNodeTest, DynamicModeCreatesByThePolicyAndDestroysWhenUnused) {
  std::vector<GpuInfo> gpus = EnableMig(0);
  // src/mig's policy: on an empty H100 a 1g goes to slice 6.
  Result<MigInstanceInfo> small = manager_->CreateFor(gpus[0], {.memory_mib = 8192});
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(small->profile, "1g.10gb");
  EXPECT_EQ(small->start, 6);
  EXPECT_THAT(small->uuid, StartsWith("MIG-"));
  EXPECT_EQ(small->caps_paths.size(), 2u);
  Result<MigInstanceInfo> half = manager_->Create(gpus[0], "mig-3g.40gb", 0);
  ASSERT_TRUE(half.ok()) << half.status().message();
  EXPECT_EQ(half->memory_mib, 40448u);
  // In the way: the 3g at 0 holds slice 2.
  Result<MigInstanceInfo> blocked = manager_->Create(gpus[0], "2g.20gb", 2);
  EXPECT_EQ(blocked.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(blocked.status().message(),
              HasSubstr("2g.20gb@2 needs memory slices 2-3, and 3g.40gb@0 holds slices 0-3"));
  EXPECT_EQ(manager_->Create(gpus[0], "3g.40gb", 2).status().code(), StatusCode::kInvalidArgument);
  // A held instance is not destroyed; a free one is.
  Status held = manager_->Destroy(gpus[0], half->uuid, {half->uuid});
  EXPECT_EQ(held.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(held.message(), HasSubstr("is in use by a container's allocation"));
  ASSERT_TRUE(manager_->Destroy(gpus[0], small->uuid, {half->uuid}).ok());
  EXPECT_EQ(manager_->Destroy(gpus[0], small->uuid, {}).code(), StatusCode::kNotFound);
  Result<std::vector<std::string>> swept = manager_->DestroyUnused(gpus[0], {half->uuid});
  ASSERT_TRUE(swept.ok());
  EXPECT_TRUE(swept->empty());
  swept = manager_->DestroyUnused(gpus[0], {});
  ASSERT_TRUE(swept.ok());
  EXPECT_THAT(*swept, ElementsAre("3g.40gb@0 (" + half->uuid + ")"));
  EXPECT_TRUE(Discover()[0].mig.instances.empty());
  // Not in MIG mode: nothing can be created.
  EXPECT_EQ(manager_->Create(gpus[1], "1g.10gb", 0).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(MigNodeTest, TheInventoryCarriesTheInstancesUnderTheirGpu) {
  std::vector<GpuInfo> gpus = EnableMig(0);
  ASSERT_TRUE(manager_->Create(gpus[0], "3g.40gb", 4).ok());
  gpus = Discover("dynamic", "", "2=none");
  Result<annotations::Inventory> inv =
      annotations::ParseInventory(GpusAnnotation(gpus, 1, 10, true));
  ASSERT_TRUE(inv.ok()) << inv.status().message();
  ASSERT_EQ(inv->gpus.size(), 3u);
  ASSERT_TRUE(inv->gpus[0].mig.has_value());
  const annotations::InventoryMig& mig = *inv->gpus[0].mig;
  EXPECT_EQ(mig.mode, "dynamic");
  EXPECT_TRUE(mig.enabled);
  ASSERT_EQ(mig.instances.size(), 1u);
  EXPECT_EQ(mig.instances[0].uuid, gpus[0].mig.instances[0].uuid);
  EXPECT_EQ(mig.instances[0].profile, "3g.40gb");
  EXPECT_EQ(mig.instances[0].start, 4);
  EXPECT_EQ(mig.instances[0].size, 4);
  EXPECT_EQ(mig.instances[0].memory_mib, 40448u);
  EXPECT_EQ(mig.instances[0].sms, 60);
  EXPECT_TRUE(mig.instances[0].healthy);
  // GPU 1: dynamic but MIG off so far; GPU 2: no MIG, no field.
  ASSERT_TRUE(inv->gpus[1].mig.has_value());
  EXPECT_FALSE(inv->gpus[1].mig->enabled);
  EXPECT_FALSE(inv->gpus[2].mig.has_value());
  // An unhealthy GPU makes its instances unhealthy.
  gpus[0].healthy = false;
  inv = annotations::ParseInventory(GpusAnnotation(gpus, 1, 10, true));
  ASSERT_TRUE(inv.ok());
  EXPECT_FALSE(inv->gpus[0].mig->instances[0].healthy);
}

TEST_F(MigNodeTest, AContainerGivenAMigDeviceGetsItsNodesAndItsUuid) {
  std::vector<GpuInfo> gpus = EnableMig(1);
  Result<MigInstanceInfo> m = manager_->Create(gpus[1], "1g.10gb", 3);
  ASSERT_TRUE(m.ok()) << m.status().message();
  gpus = Discover();
  const Grant grant{.mode = "hard",
                    .devices = {{.uuid = m->uuid, .memory_mib = 5120, .cores = 50}}};
  Result<std::string> spec = CdiSpecText("abc", grant, gpus, "/run/nvidia/driver");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  nlohmann::json doc = nlohmann::json::parse(*spec);
  const nlohmann::json& edits = doc["devices"][0]["containerEdits"];
  std::vector<std::string> paths;
  for (const nlohmann::json& n : edits["deviceNodes"]) paths.push_back(n["path"]);
  EXPECT_THAT(paths, ElementsAre(gpus[1].device_path, m->caps_paths[0], m->caps_paths[1],
                                 "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"));
  EXPECT_EQ(edits["deviceNodes"][1]["hostPath"], "/run/nvidia/driver" + m->caps_paths[0]);
  EXPECT_THAT(edits["env"],
              ElementsAre("TESSERA_VISIBLE_GPUS=" + m->uuid, "CUDA_VISIBLE_DEVICES=" + m->uuid));
  EXPECT_THAT(LimitsText(grant, gpus), HasSubstr("uuid.0=" + m->uuid + "\nmemory.0=5368709120\n"));
  // A GPU's own spec is as before: no CUDA_VISIBLE_DEVICES.
  Result<std::string> plain =
      CdiSpecText("def", {.mode = "hard", .devices = {{.uuid = gpus[2].uuid}}}, gpus);
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(*plain, Not(HasSubstr("CUDA_VISIBLE_DEVICES")));
  // Without the minors table the device cannot be handed out, and the error says why.
  gpus[1].mig.instances[0].caps_paths.clear();
  EXPECT_THAT(CdiSpecText("abc", grant, gpus).status().message(),
              HasSubstr("has no capability device nodes: the driver's MIG minors table"));
}

TEST_F(MigNodeTest, MetricsGivePerInstanceFigures) {
  std::vector<GpuInfo> gpus = EnableMig(0);
  Result<MigInstanceInfo> m = manager_->Create(gpus[0], "2g.20gb", 2);
  ASSERT_TRUE(m.ok()) << m.status().message();
  gpus = Discover("dynamic", "", "2=none");
  testing::TempDir state;
  const std::string text = RenderMetrics("n1", state.path(), gpus);
  const std::string labels = "gpu=\"0\",UUID=\"" + gpus[0].uuid +
                             "\",modelName=\"NVIDIA H100 80GB HBM3\",mig_uuid=\"" + m->uuid +
                             "\",profile=\"2g.20gb\",placement=\"2:2\"}";
  EXPECT_THAT(text,
              HasSubstr("tessera_mig_instance_memory_total_bytes{node=\"n1\",Hostname=\"n1\"," +
                        labels + " " + std::to_string(20096ull << 20)));
  EXPECT_THAT(text, HasSubstr(labels + " 32\n"));  // SMs
  EXPECT_THAT(
      text, HasSubstr("tessera_mig_instance_healthy{node=\"n1\",Hostname=\"n1\"," + labels + " 1"));
  EXPECT_THAT(text, HasSubstr("tessera_gpu_mig_enabled{node=\"n1\",Hostname=\"n1\",gpu=\"0\""));
  EXPECT_THAT(text, HasSubstr(",mode=\"dynamic\",pending=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(",mode=\"dynamic\",pending=\"0\"} 0\n"));  // GPU 1: not yet on
  EXPECT_THAT(text, Not(HasSubstr("modelName=\"SimGPU\",mode=")));       // GPU 2: no MIG
}

// What the agent gives a container on a MIG device holds inside it: CUDA sees the MIG device (its
// UUID from CUDA_VISIBLE_DEVICES, as the CDI spec sets it), and the library applies the limits
// file's memory limit to it as to a small GPU; without a limit the device has its GPU
// instance's memory.
TEST_F(MigNodeTest, TheLibrarysLimitHoldsOnAMigDevice) {
  std::vector<GpuInfo> gpus = EnableMig(0);
  Result<MigInstanceInfo> m = manager_->Create(gpus[0], "1g.10gb", 2);
  ASSERT_TRUE(m.ok()) << m.status().message();
  gpus = Discover();
  auto probe = [&](uint64_t limit_bytes, uint64_t expect_total) {
    const std::string region = state_->path() + "/region-" + std::to_string(limit_bytes);
    const std::string limits = state_->path() + "/limits-" + std::to_string(limit_bytes);
    const Grant grant{.mode = "hard",
                      .devices = {{.uuid = m->uuid, .memory_mib = limit_bytes >> 20}}};
    // The agent's file, with the region where this test keeps it instead of the container's path.
    std::string text = LimitsText(grant, gpus);
    const std::string container_region = std::string("region=") + kContainerRegionDir + "/region\n";
    ASSERT_NE(text.find(container_region), std::string::npos) << text;
    text = text.substr(0, text.find(container_region)) + "region=" + region + "\n";
    std::ofstream(limits) << text << "end=" << text.size() << "\n";
    Result<std::string> spec = CdiSpecText("x", grant, gpus);
    EXPECT_TRUE(spec.ok());
    std::string visible;
    const nlohmann::json doc = nlohmann::json::parse(*spec);
    for (const nlohmann::json& e : doc["devices"][0]["containerEdits"]["env"]) {
      const std::string text = e;
      if (text.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) visible = text;
    }
    EXPECT_EQ(visible, "CUDA_VISIBLE_DEVICES=" + m->uuid);
    const std::string command =
        "env LD_PRELOAD=" + BuildDir() + "/lib/libtessera-cuda.so LD_LIBRARY_PATH=" + BuildDir() +
        "/lib/simgpu TESSERA_LIMITS_FILE=" + limits + " CUDA_DEVICE_MEMORY_SHARED_CACHE=" + region +
        " " + visible + " " + BuildDir() + "/tests/hook_probe direct devices " +
        std::to_string(expect_total) + " >" + limits + ".out 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream out(limits + ".out");
    const std::string said((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command << "\n" << said;
  };
  probe(4096ull << 20, 4096ull << 20);
  probe(0, m->memory_mib << 20);  // no limit: the GPU instance's memory
}

}  // namespace
}  // namespace tessera::node
