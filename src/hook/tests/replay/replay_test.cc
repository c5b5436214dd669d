// Real programs' ways of sharing GPU memory between processes (hook_replay's scenarios), run bare
// on simgpu and under libtessera-cuda.so: every driver call must return the same, and each device
// must hold, by the driver's count and by the library's, exactly what the processes on it own
// (contexts and their allocations): memory a process opened from another is charged once, to its
// owner, never again to the process that opened it.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "../hook_env.h"
#include "../process.h"

namespace tessera::hooktest {
namespace {

struct Scenario {
  const char* name;
  int ranks;
  std::map<int, int> devices_of;  // rank -> device its memory is on
  const char* peers;              // the machine's topology (SIMGPU_DEVICES peers=)
};

// Multi-GPU jobs on an NVLink board (vLLM's custom all-reduce asks NVML for NVLink between every
// pair of its GPUs), single-GPU sharing on a PCIe server.
const Scenario kScenarios[] = {
    {"vllm-custom-allreduce", 2, {{0, 0}, {1, 1}}, "nvlink"},
    {"vllm-custom-allreduce", 4, {{0, 0}, {1, 1}, {2, 2}, {3, 3}}, "nvlink"},
    {"torch-tensor-ipc", 2, {{0, 0}, {1, 0}}, "pcie"},
    {"torch-expandable-segments", 2, {{0, 0}, {1, 0}}, "pcie"},
    {"nccl-p2p-cumem", 2, {{0, 0}, {1, 1}}, "nvlink"},
    {"nccl-p2p-cumem", 4, {{0, 0}, {1, 1}, {2, 2}, {3, 3}}, "nvlink"},
    {"nccl-nvls", 4, {{0, 0}, {1, 1}, {2, 2}, {3, 3}}, "nvlink"},
    {"nccl-host-cumem", 2, {{0, 0}, {1, 1}}, "pcie"},
    {"vulkan-interop", 1, {{0, 0}}, "pcie"},
    {"vulkan-interop", 2, {{0, 0}, {1, 0}}, "pcie"},
};

std::string DevicesFor(const Scenario& s) {
  return "count=" + std::to_string(s.ranks) + ",memory=16GiB,ctxmem=518MiB,peers=" + s.peers;
}

class ReplayTest : public ::testing::TestWithParam<std::tuple<int, const char*>> {
 protected:
  const Scenario& scenario() const { return kScenarios[std::get<0>(GetParam())]; }
  const char* route() const { return std::get<1>(GetParam()); }

  // The ranks' results; nullopt when this machine cannot run the scenario (the reason in *why).
  std::optional<nlohmann::json> Replay(const Env& env, std::string* why) {
    RunResult r = RunProgram({hook.build_dir() + "/tests/hook_replay", scenario().name,
                              std::to_string(scenario().ranks), route()},
                             env, std::chrono::seconds(60));
    if (r.exit_code == 77) {
      *why = r.err;
      return std::nullopt;
    }
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    nlohmann::json out = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(out.is_array()) << r.Describe();
    return out.is_array() ? out : nlohmann::json::array();
  }

  // Each rank saw, on its device, the contexts and allocations of the ranks there: by the
  // driver's process list, and by cuMemGetInfo (the device bare, the container's charge under
  // the library).
  void ExpectChargedOnce(const nlohmann::json& ranks, uint64_t context_bytes, uint64_t total,
                         const std::string& run) {
    std::map<int, uint64_t> owned;
    for (const auto& rank : ranks) {
      owned[scenario().devices_of.at(rank["rank"].get<int>())] +=
          context_bytes + rank["own_bytes"].get<uint64_t>();
    }
    for (const auto& rank : ranks) {
      int device = scenario().devices_of.at(rank["rank"].get<int>());
      const auto& peak = rank["peak"];
      EXPECT_EQ(peak.value("cuda_total", uint64_t{0}), total) << run;  // the library's view
      EXPECT_EQ(peak.value("cuda_used", uint64_t{0}), owned[device])
          << run << " rank " << rank["rank"] << " device " << device;
      EXPECT_EQ(peak.value("nvml_used_by_processes", uint64_t{0}), owned[device])
          << run << " rank " << rank["rank"] << " device " << device;
    }
  }

  HookEnv hook;
};

TEST_P(ReplayTest, SameResultsBareAndUnderTheLibraryAndEachByteChargedOnce) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs several simgpu devices";
  const std::string devices = DevicesFor(scenario());
  Env bare = hook.ProbeEnv(devices);
  bare.erase("LD_PRELOAD");
  std::string why;
  std::optional<nlohmann::json> bare_run = Replay(bare, &why);
  if (!bare_run) GTEST_SKIP() << "this machine cannot run it: " << why;
  const nlohmann::json& without = *bare_run;
  Env limited = hook.ProbeEnv(devices);
  limited["CUDA_DEVICE_MEMORY_LIMIT"] = "4g";
  std::optional<nlohmann::json> limited_run = Replay(limited, &why);
  ASSERT_TRUE(limited_run) << why;
  const nlohmann::json& with = *limited_run;
  ASSERT_EQ(without.size(), static_cast<size_t>(scenario().ranks));
  ASSERT_EQ(with.size(), without.size());
  for (size_t r = 0; r < with.size(); ++r) {
    EXPECT_EQ(with[r]["calls"], without[r]["calls"]) << "rank " << r;
  }
  ExpectChargedOnce(without, HookEnv::ContextCost(devices), 16 * kGiB, "bare");
  ExpectChargedOnce(with, HookEnv::ContextCost(devices), 4 * kGiB, "under the library");
}

// Calls with NULL, zero and invalid arguments (null_arguments.cc) answer the same bare and under
// the library, which must not crash where the driver answers an error.
class NullArgumentsTest : public ::testing::TestWithParam<const char*> {
 protected:
  HookEnv hook;
};

TEST_P(NullArgumentsTest, AnsweredAsTheDriverAnswersThem) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "compares with simgpu's answers";
  auto run = [&](const Env& env) {
    RunResult r =
        RunProgram({hook.build_dir() + "/tests/hook_replay", "null-arguments", "1", GetParam()},
                   env, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    nlohmann::json out = nlohmann::json::parse(r.out, nullptr, false);
    return out.is_array() && out.size() == 1 ? out[0]["calls"] : nlohmann::json();
  };
  Env bare = hook.ProbeEnv();
  bare.erase("LD_PRELOAD");
  Env limited = hook.ProbeEnv();
  limited["CUDA_DEVICE_MEMORY_LIMIT"] = "4g";
  nlohmann::json without = run(bare), with = run(limited);
  ASSERT_TRUE(without.is_array());
  ASSERT_EQ(with.size(), without.size());
  for (size_t i = 0; i < with.size(); ++i) EXPECT_EQ(with[i], without[i]);
}

INSTANTIATE_TEST_SUITE_P(Routes, NullArgumentsTest, ::testing::Values("direct", "runtime"));

std::string Name(const ::testing::TestParamInfo<std::tuple<int, const char*>>& info) {
  const Scenario& s = kScenarios[std::get<0>(info.param)];
  std::string name =
      std::string(s.name) + "_" + std::to_string(s.ranks) + "ranks_" + std::get<1>(info.param);
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, ReplayTest,
    ::testing::Combine(::testing::Range(0, static_cast<int>(std::size(kScenarios))),
                       ::testing::Values("direct", "runtime")),
    Name);

}  // namespace
}  // namespace tessera::hooktest
