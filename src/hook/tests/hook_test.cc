// Process tests of libtessera-cuda.so: each runs hook_probe (a real CUDA program) with the
// library preloaded over simgpu, in a per-test state directory and region.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hook_env.h"

namespace tessera::hooktest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

std::string Bytes(uint64_t n) {
  return std::to_string(n);
}

// What one context costs on the tests' machine (kDevices, or the real GPU): every limit below
// holds the contexts of the test's processes beside what the test allocates.
uint64_t ContextBytes() {
  return HookEnv::ContextCost();
}

// The scenarios that run through each route a program can take to the driver.
class RouteTest : public ::testing::TestWithParam<std::string> {
 protected:
  RunResult Probe(const std::vector<std::string>& args, Env env,
                  milliseconds timeout = seconds(60)) {
    std::vector<std::string> argv = {hook.probe(), GetParam()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProgram(argv, env, timeout);
  }
  HookEnv hook;
};

TEST_P(RouteTest, LastGranuleFitsAndTheNextByteDoesNot) {
  const uint64_t limit = ContextBytes() + 256 * kMiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  RunResult r = Probe({"boundary", Bytes(limit)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.err, "") << "the library must be silent at the default log level";
}

TEST_P(RouteTest, EveryAllocationPathIsChargedReleasedAndRefused) {
  // The primary context and the one the probe creates, beside its allocations.
  const uint64_t limit = 2 * ContextBytes() + 256 * kMiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  // On a real driver a created context need not cost what the primary one did: the probe then only
  // checks that each is charged.
  RunResult r =
      Probe({"paths", Bytes(limit), HookEnv::RealDriver() ? "any" : Bytes(ContextBytes())}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

// Regression (issue 15): cuMemRelease of a mapped handle released its charge, while the driver
// holds the memory until the last mapping is gone.
TEST_P(RouteTest, VmmMemoryStaysChargedWhileMapped) {
  const uint64_t limit = ContextBytes() + 256 * kMiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  RunResult r = Probe({"vmm", Bytes(limit)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

// Regression (issue 15): each stream-ordered allocation was charged rounded up to 2 MiB (1000
// small ones made a false out-of-memory), memory a pool keeps above its release threshold was not
// charged, and a host pool was charged as device memory.
TEST_P(RouteTest, PoolsAreChargedWhatTheyHold) {
  const uint64_t limit = ContextBytes() + 256 * kMiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  RunResult r = Probe({"pools", Bytes(limit)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

// Regression (issue 17): a stream-ordered allocation that the pool's fragmentation took over the
// limit was undone with a synchronisation, which another thread's capture in global mode forbids:
// the capture was invalidated.
TEST_P(RouteTest, PoolAllocationUndoneBesideACaptureLeavesItValid) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's pool chunks";
  const uint64_t limit = ContextBytes() + 256 * kMiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  RunResult r = Probe({"pool-refused-beside-capture", Bytes(limit)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

// Regression (issue 15): the device heap set by cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE) was not
// charged.
TEST_P(RouteTest, DeviceHeapIsCharged) {
  const uint64_t limit = 2 * ContextBytes() + 256 * kMiB;  // the probe creates a second context
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  RunResult r = Probe({"heap", Bytes(limit)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

// Regression (issue 15): graph memory nodes (cuGraphAddMemAllocNode, allocations captured into a
// graph) were not charged at all.
TEST_P(RouteTest, GraphMemoryIsCharged) {
  const uint64_t limit = ContextBytes() + 256 * kMiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  RunResult r = Probe({"graphs", Bytes(limit)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_P(RouteTest, InfoReportsTheLimit) {
  const uint64_t limit = ContextBytes() + kGiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  RunResult r = Probe({"info", Bytes(limit), Bytes(limit)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_P(RouteTest, InfoClampsALimitAboveTheDevice) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's devices";
  Env env = hook.ProbeEnv("count=1,memory=8GiB,ctxmem=518MiB");  // kDevices' contexts, 8 GiB
  env["CUDA_DEVICE_MEMORY_LIMIT"] = "32g";
  RunResult r = Probe({"info", Bytes(32 * kGiB), Bytes(8 * kGiB)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_P(RouteTest, ForkedChildrenNeitherInheritNorReleaseTheParentsCharge) {
  const uint64_t limit = ContextBytes() + kGiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  RunResult r = Probe({"fork", Bytes(limit)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_P(RouteTest, TwoDevicesHaveTheirOwnLimits) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's devices";
  const uint64_t limit0 = ContextBytes() + kGiB, limit1 = ContextBytes() + 512 * kMiB;
  Env env = hook.ProbeEnv(kTwoDevices);
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit0);
  env["CUDA_DEVICE_MEMORY_LIMIT_1"] = Bytes(limit1);
  RunResult r = Probe({"devices", Bytes(limit0), Bytes(limit1)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_P(RouteTest, ContextsRetainedBeforeUseKeepEachLimitOnItsDevice) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's devices";
  const uint64_t limit0 = ContextBytes() + kGiB, limit1 = ContextBytes() + 512 * kMiB;
  Env env = hook.ProbeEnv(kTwoDevices);
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit0);
  env["CUDA_DEVICE_MEMORY_LIMIT_1"] = Bytes(limit1);
  RunResult r = Probe({"devices-retained-first", Bytes(limit0), Bytes(limit1)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_P(RouteTest, VisibleDevicesReorderingKeepsEachLimitOnItsDevice) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's devices";
  const uint64_t limit0 = ContextBytes() + 256 * kMiB, limit1 = ContextBytes() + 512 * kMiB;
  Env env = hook.ProbeEnv(kTwoDevices);
  env["CUDA_DEVICE_MEMORY_LIMIT_0"] = Bytes(limit0);
  env["CUDA_DEVICE_MEMORY_LIMIT_1"] = Bytes(limit1);
  env["CUDA_VISIBLE_DEVICES"] = "1,0";
  RunResult r = Probe({"devices", Bytes(limit1), Bytes(limit0)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_P(RouteTest, LimitsFileMapsDevicesByUuid) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's devices";
  nlohmann::json stat = hook.Stat(kTwoDevices);
  std::string u0 = stat["devices"][0]["uuid"], u1 = stat["devices"][1]["uuid"];
  const uint64_t limit0 = ContextBytes() + 256 * kMiB, limit1 = ContextBytes() + 512 * kMiB;
  Env env = hook.ProbeEnv(kTwoDevices);
  env["TESSERA_LIMITS_FILE"] = hook.WriteLimits(
      "limits", "version=2\nmode=hard\ndevices=2\nuuid.0=" + u0 + "\nuuid.1=" + u1 +
                    "\nmemory.0=" + Bytes(limit0) + "\nmemory.1=" + Bytes(limit1) +
                    "\ncores.0=0\ncores.1=0\nregion=" + hook.region_path() + "\n");
  env["CUDA_VISIBLE_DEVICES"] = "1,0";
  env["CUDA_DEVICE_MEMORY_LIMIT"] = "8g";  // ignored: the file wins
  RunResult r = Probe({"devices", Bytes(limit1), Bytes(limit0)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_P(RouteTest, ContextDestroyAndResetReleaseTheirAllocations) {
  Env env = hook.ProbeEnv();
  // The primary context and one created beside it, with up to 64 MiB allocated.
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(2 * ContextBytes() + 256 * kMiB);
  RunResult r = Probe({"contexts"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

INSTANTIATE_TEST_SUITE_P(Routes, RouteTest, ::testing::Values("direct", "runtime", "runtime-ptds"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

class HookTest : public ::testing::Test {
 protected:
  RunResult Probe(const std::vector<std::string>& args, const Env& env,
                  milliseconds timeout = seconds(60)) {
    std::vector<std::string> argv = {hook.probe()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProgram(argv, env, timeout);
  }
  HookEnv hook;
};

TEST_F(HookTest, EightProcessesNeverExceedTheLimitTogether) {
  // Eight contexts and 2 GiB beside them. The processes open their contexts before any allocates
  // (one refused its context because the others had taken the whole limit would be the limit at
  // work, not a failure), and each frees everything, its context too, before it exits.
  const uint64_t limit = 8 * ContextBytes() + 2 * kGiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  const std::string opened = hook.dir() + "/opened";
  ASSERT_TRUE(std::filesystem::create_directory(opened));
  std::vector<std::thread> threads;
  std::vector<RunResult> results(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      std::vector<std::string> argv = {hook.probe(), i % 2 ? "runtime" : "direct",
                                       "stress",     "10",
                                       Bytes(limit), Bytes(1234 + i),
                                       opened,       "8"};
      results[i] = RunProgram(argv, env, seconds(90));
    });
  }
  for (auto& t : threads) t.join();
  uint64_t allocations = 0;
  for (const auto& r : results) {
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    auto at = r.out.find("allocations=");
    if (at != std::string::npos) allocations += std::stoull(r.out.substr(at + 12));
  }
  EXPECT_GT(allocations, 1000u);
  if (!HookEnv::RealDriver()) {  // the device's own view of its usage
    nlohmann::json stat = hook.Stat();
    uint64_t peak = stat["devices"][0]["peak_used_bytes"];
    EXPECT_LE(peak, limit);
    EXPECT_GT(peak, limit - kGiB) << "the processes should have come close to the limit";
    EXPECT_EQ(uint64_t(stat["devices"][0]["used_bytes"]), 0u);
  }
  const tessera_region* region = hook.MapRegion();
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->devices[0].used_bytes, 0u);
  EXPECT_LE(region->devices[0].peak_bytes, limit);
}

// Runs `churn` (a context-churn probe) while `others` allocate and free; all must pass.
void RunBeside(const std::vector<std::string>& churn, const Env& churn_env,
               const std::vector<std::vector<std::string>>& others, const Env& others_env) {
  std::vector<RunResult> results(others.size() + 1);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < others.size(); ++i) {
    threads.emplace_back(
        [&, i] { results[i + 1] = RunProgram(others[i], others_env, seconds(60)); });
  }
  results[0] = RunProgram(churn, churn_env, seconds(60));
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(results[0].out.find("contexts="), std::string::npos) << results[0].Describe();
}

// A neighbour container (its own region, no limit) allocating gigabytes while this container
// creates contexts: each context is charged its own cost, never the neighbour's memory.
TEST_F(HookTest, ContextCostIgnoresANeighbourContainersAllocations) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's context cost";
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(2 * ContextBytes() + 256 * kMiB);  // primary + created
  Env neighbour = env;
  neighbour.erase("CUDA_DEVICE_MEMORY_LIMIT");
  neighbour["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = hook.dir() + "/neighbour-region";
  std::vector<std::vector<std::string>> others;
  for (int i = 0; i < 2; ++i) {
    others.push_back({hook.probe(), "direct", "juggle", "3", Bytes(4 * kGiB)});
  }
  RunBeside({hook.probe(), "direct", "context-churn", "300", Bytes(ContextBytes())}, env, others,
            neighbour);
}

// Without NVML's view of this process (a PID namespace; here the pids file names a host PID that
// is not this process), the cost is measured through the device's free memory.
TEST_F(HookTest, ContextCostWithoutTheHostPidComesFromTheDevicesFreeMemory) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's context cost";
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(2 * ContextBytes() + 256 * kMiB);  // primary + created
  env["TESSERA_PIDS_FILE"] = hook.dir() + "/pids";
  env["TESSERA_LOG_LEVEL"] = "debug";
  // Host PID 1 (init) never has a context: NVML does not list this process under it.
  RunResult r = Probe({"direct", "context-churn", "20", Bytes(ContextBytes()), "1"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.err.find(Bytes(ContextBytes()) + " bytes by the device's free memory"),
            std::string::npos)
      << r.Describe();
  EXPECT_EQ(r.err.find("by NVML's count"), std::string::npos) << r.Describe();
}

TEST_F(HookTest, KilledProcessChargeIsFreeForTheNextAllocationAtOnce) {
  const uint64_t limit = 2 * ContextBytes() + 2 * kGiB;  // two processes' contexts and 2 GiB
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  Child holder({hook.probe(), "direct", "hold", Bytes(1536 * kMiB)}, env);
  ASSERT_TRUE(holder.WaitForLine("held", seconds(30)));
  // The second process is initialised before the kill, so that only the allocation is timed
  // (driver start-up is not the library's to bound).
  std::string go = hook.dir() + "/go";
  Child next({hook.probe(), "direct", "alloc-when", Bytes(limit - ContextBytes()), go}, env);
  ASSERT_TRUE(next.WaitForLine("ready", seconds(30)));
  holder.KillAndReap(SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  hook.WriteFile("go", "");
  int code = next.Wait(seconds(30));
  auto took = std::chrono::steady_clock::now() - killed;
  EXPECT_EQ(code, 0)
      << "the whole limit (less its own context) must be free once the holder is dead";
  EXPECT_LT(took, seconds(1));
}

// Waits at most `timeout` for device 0's usage in `region` to read `bytes`; returns how long it
// took (`timeout` or more when it never did).
std::chrono::steady_clock::duration WaitForUsage(const tessera_region* region, uint64_t bytes,
                                                 milliseconds timeout) {
  auto start = std::chrono::steady_clock::now();
  while (__atomic_load_n(&region->devices[0].used_bytes, __ATOMIC_RELAXED) != bytes &&
         std::chrono::steady_clock::now() - start < timeout) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  return std::chrono::steady_clock::now() - start;
}

TEST_F(HookTest, KilledProcessChargeIsReleasedWithinOneSecondWithoutNewAllocations) {
  const uint64_t ctx = ContextBytes();
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(2 * ctx + 2 * kGiB);
  Child idle({hook.probe(), "direct", "hold", Bytes(256 * kMiB)}, env);
  ASSERT_TRUE(idle.WaitForLine("held", seconds(30)));
  Child victim({hook.probe(), "runtime", "hold", Bytes(kGiB)}, env);
  ASSERT_TRUE(victim.WaitForLine("held", seconds(30)));
  const tessera_region* region = hook.MapRegion();
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->devices[0].used_bytes, 2 * ctx + kGiB + 256 * kMiB);
  // Not reaped on purpose: a zombie is as dead as a reaped process.
  kill(victim.pid(), SIGKILL);
  auto took = WaitForUsage(region, ctx + 256 * kMiB, seconds(5));
  EXPECT_EQ(region->devices[0].used_bytes, ctx + 256 * kMiB);
  EXPECT_LT(took, seconds(1));
}

// Pods sharing one DRA claim: one region, processes in PID namespaces of their own, each the
// namespace's PID 1, none seeing the others in /proc. They share one limit: a second pod's process
// neither takes the first's slot (same PID) nor frees its charge (a PID it cannot see), and the
// first's charge is free once it is killed.
TEST_F(HookTest, ProcessesInTwoPidNamespacesShareOneLimit) {
  if (geteuid() != 0 || access("/usr/bin/unshare", X_OK) != 0) {
    GTEST_SKIP() << "needs root and unshare(1) for PID namespaces";
  }
  const uint64_t ctx = ContextBytes();
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(2 * ctx + 4 * kGiB);  // two processes' contexts and 4 GiB
  auto in_own_namespace = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/unshare", "--pid", "--mount-proc", "--kill-child",
                                     hook.probe()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  Child holder(in_own_namespace({"direct", "hold", Bytes(3 * kGiB)}), env);
  ASSERT_TRUE(holder.WaitForLine("held", seconds(30)));
  RunResult over = RunProgram(in_own_namespace({"direct", "alloc", Bytes(2 * kGiB)}), env);
  EXPECT_EQ(over.exit_code, 3) << "3 GiB of 4 are held in the other namespace: " << over.Describe();
  RunResult fits = RunProgram(in_own_namespace({"direct", "alloc", Bytes(512 * kMiB)}), env);
  EXPECT_EQ(fits.exit_code, 0) << fits.Describe();
  const tessera_region* region = hook.MapRegion();
  ASSERT_NE(region, nullptr);
  EXPECT_GE(region->devices[0].used_bytes, ctx + 3 * kGiB) << "the holder's charge must stay";

  std::string go = hook.dir() + "/go";
  Child next(in_own_namespace({"direct", "alloc-when", Bytes(3 * kGiB), go}), env);
  ASSERT_TRUE(next.WaitForLine("ready", seconds(30)));
  // The namespace's PID 1 (unshare's child) is killed, and once unshare has reaped it and exited,
  // it is gone: only then is the next allocation timed.
  std::ifstream children("/proc/" + std::to_string(holder.pid()) + "/task/" +
                         std::to_string(holder.pid()) + "/children");
  pid_t init = 0;
  ASSERT_TRUE(children >> init) << "unshare's child not found";
  ASSERT_EQ(kill(init, SIGKILL), 0);
  holder.Wait(seconds(10));  // unshare exits (status 1) once its child is gone
  auto killed = std::chrono::steady_clock::now();
  hook.WriteFile("go", "");
  EXPECT_EQ(next.Wait(seconds(30)), 0) << "the holder's 3 GiB must be free once it is dead";
  EXPECT_LT(std::chrono::steady_clock::now() - killed, seconds(1));
}

// Maps the test's region writable in a forked child (the parent's mapping is read-only).
tessera_region* MapRegionInChild(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) _exit(1);
  void* p = mmap(nullptr, sizeof(tessera_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) _exit(1);
  return static_cast<tessera_region*>(p);
}

// Changes the test's region from a forked child, as another process of the container would (the
// test's own mapping is read-only); returns once the child is done.
template <typename Change>
void ChangeRegion(const std::string& path, Change change) {
  pid_t pid = fork();
  if (pid == 0) {
    change(MapRegionInChild(path));
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(HookTest, ProcessDyingInsideTheRegionLockLeavesItUsable) {
  const uint64_t ctx = ContextBytes();
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(2 * ctx + kGiB);  // two processes' contexts and 1 GiB
  Child holder({hook.probe(), "direct", "hold", Bytes(256 * kMiB)}, env);
  ASSERT_TRUE(holder.WaitForLine("held", seconds(30)));
  // A process takes the region's lock (as when it claims or frees a slot) and dies holding it.
  pid_t pid = fork();
  if (pid == 0) {
    tessera_region* region = MapRegionInChild(hook.region_path());
    _exit(pthread_mutex_lock(&region->lock.mutex) == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // The next locker gets EOWNERDEAD and goes on: the new process gets a slot, 768 MiB fit.
  RunResult r = Probe({"direct", "alloc", Bytes(768 * kMiB)}, env, seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  // It exited holding them: its charge stays until a sweep (the holder's reaper, which takes the
  // lock too) finds it dead (issue 28).
  const tessera_region* region = hook.MapRegion();
  ASSERT_NE(region, nullptr);
  WaitForUsage(region, ctx + 256 * kMiB, seconds(5));
  EXPECT_EQ(region->devices[0].used_bytes, ctx + 256 * kMiB);
}

// A process killed between its charge's two steps (the device total, then its slot) leaves the
// total above what the live processes hold: never below (nothing is over-allocated), and given
// back once the container has no process, so that the limit is whole again for the next one.
TEST_F(HookTest, ChargeLeftByAProcessKilledMidUpdateIsGivenBackWhenNoProcessIsLeft) {
  const uint64_t ctx = ContextBytes(), limit = 2 * ctx + kGiB;  // two processes' contexts and 1 GiB
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  RunResult r = Probe({"direct", "alloc", Bytes(2 * kMiB)}, env, seconds(30));  // makes the region
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  {
    Child holder({hook.probe(), "direct", "hold", Bytes(256 * kMiB)}, env);
    ASSERT_TRUE(holder.WaitForLine("held", seconds(30)));
    // As if killed after its compare-and-swap on the total, before its slot.
    ChangeRegion(hook.region_path(), [](tessera_region* region) {
      __atomic_add_fetch(&region->devices[0].used_bytes, 512 * kMiB, __ATOMIC_RELAXED);
    });
    // While the holder lives the orphaned 512 MiB stay charged: 512 MiB more do not fit.
    r = Probe({"direct", "alloc", Bytes(512 * kMiB)}, env, seconds(30));
    EXPECT_EQ(r.exit_code, 3) << r.Describe();
    holder.KillAndReap(SIGTERM);
  }
  // No process left: the next one to take a slot gives the orphaned charge back, and has the whole
  // limit but its context.
  env["TESSERA_LOG_LEVEL"] = "debug";
  r = Probe({"direct", "alloc", Bytes(limit - ctx)}, env, seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("with no process left to hold them")) << r.Describe();
}

// Issue 15: a process stopped (SIGSTOP, a debugger) while it holds the region's lock never delays
// the charges and releases of the container's running processes (they take no lock), and delays
// a new process by about a second, which is then refused: nothing is allocated past the
// accounting meanwhile.
TEST_F(HookTest, StoppedLockHolderDelaysOnlyNewProcessesBoundedlyAndNothingIsOverAllocated) {
  const uint64_t ctx = ContextBytes();
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(2 * ctx + kGiB);  // two processes' contexts and 1 GiB
  std::string go = hook.dir() + "/go", again = hook.dir() + "/again";
  Child holder({hook.probe(), "direct", "free-later", Bytes(256 * kMiB), go, again}, env);
  ASSERT_TRUE(holder.WaitForLine("held", seconds(30)));
  pid_t locker = fork();
  if (locker == 0) {
    tessera_region* region = MapRegionInChild(hook.region_path());
    if (pthread_mutex_lock(&region->lock.mutex) != 0) _exit(1);
    raise(SIGSTOP);
    pthread_mutex_unlock(&region->lock.mutex);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(locker, &status, WUNTRACED), locker);
  ASSERT_TRUE(WIFSTOPPED(status));
  // A new process: refused (it cannot take a slot), within a few seconds, and it says why.
  auto start = std::chrono::steady_clock::now();
  RunResult r = Probe({"direct", "alloc", Bytes(512 * kMiB)}, env, seconds(30));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_NE(r.exit_code, 0) << r.Describe();
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(took, seconds(5));
  EXPECT_THAT(r.err, HasSubstr("lock has been held for over 1 s")) << r.Describe();
  // The device holds only what is charged.
  if (!HookEnv::RealDriver()) {
    EXPECT_EQ(uint64_t(hook.Stat()["devices"][0]["used_bytes"]), ctx + 256 * kMiB);
  }
  // The running process frees and allocates during the stall, at once, and the region follows.
  const tessera_region* region = hook.MapRegion();
  ASSERT_NE(region, nullptr);
  start = std::chrono::steady_clock::now();
  hook.WriteFile("go", "");
  ASSERT_TRUE(holder.WaitForLine("freed", seconds(10)));
  EXPECT_EQ(region->devices[0].used_bytes, ctx);
  hook.WriteFile("again", "");
  ASSERT_TRUE(holder.WaitForLine("done", seconds(10)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(1));
  EXPECT_EQ(region->devices[0].used_bytes, ctx + 2 * kMiB);
  kill(locker, SIGCONT);
  ASSERT_EQ(waitpid(locker, &status, 0), locker);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  r = Probe({"direct", "alloc", Bytes(512 * kMiB)}, env, seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Runs `compute_load startup` (one launch under the compute limit) and checks that it ends within
// a few seconds, logging `says`.
void ExpectQuickLaunch(const HookEnv& hook, const Env& env, const std::string& says) {
  auto start = std::chrono::steady_clock::now();
  RunResult r = RunProgram({hook.build_dir() + "/tests/compute_load", "startup"}, env, seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
  EXPECT_THAT(r.err, HasSubstr(says)) << r.Describe();
}

constexpr uint64_t kHourNs = 3600ull * 1000000000ull;

// Issue 17 item 6: the region outlives a reboot (it lies in the node agent's state folder). What
// the previous boot left, a device-time clock an uptime ahead and a slot whose PID is taken again,
// must neither make launches sleep nor keep memory charged.
TEST_F(HookTest, RegionOfAnEarlierBootStartsOver) {
  const uint64_t limit = ContextBytes() + kGiB;
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(limit);
  env["CUDA_DEVICE_SM_LIMIT"] = "30";
  env["TESSERA_LOG_LEVEL"] = "info";
  RunResult r = Probe({"direct", "alloc", Bytes(2 * kMiB)}, env, seconds(30));  // makes the region
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  pid_t self = getpid();
  ChangeRegion(hook.region_path(), [self](tessera_region* region) {
    region->boot_id[0] ^= 1;  // another boot
    region->devices[0].compute_tat_ns = MonotonicNs() + kHourNs;
    region->slots[7].pid = self;  // alive in this boot, so no sweep frees it
    region->slots[7].used_bytes[0] = 900 * kMiB;
    region->devices[0].used_bytes = 900 * kMiB;
  });
  if (!HookEnv::RealDriver()) {  // compute_load launches simgpu's kernels
    ExpectQuickLaunch(hook, env, "before the machine rebooted");
  }
  r = Probe({"direct", "alloc", Bytes(limit - ContextBytes())}, env, seconds(30));
  EXPECT_EQ(r.exit_code, 0) << "the previous boot's 900 MiB must be gone: " << r.Describe();
}

// Whatever wrote the clock (a region whose boot was not recorded, a process that writes the
// region), no launch waits longer than any share can make it wait.
TEST_F(HookTest, DeviceTimeClockFarAheadIsRestartedInsteadOfSleptOn) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's kernels (compute_load)";
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_SM_LIMIT"] = "30";
  RunResult r = Probe({"direct", "alloc", Bytes(2 * kMiB)}, env, seconds(30));
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ChangeRegion(hook.region_path(), [](tessera_region* region) {
    region->devices[0].compute_tat_ns = MonotonicNs() + kHourNs;
  });
  ExpectQuickLaunch(hook, env, "restarted it from now");
}

TEST_F(HookTest, LogLevelMakesItTalk) {
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(ContextBytes() + 256 * kMiB);
  env["TESSERA_LOG_LEVEL"] = "debug";
  RunResult r = Probe({"direct", "alloc", Bytes(512 * kMiB)}, env);
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
  EXPECT_NE(r.err.find("refused"), std::string::npos) << r.err;
  env.erase("TESSERA_LOG_LEVEL");
  env["LIBCUDA_LOG_LEVEL"] = "2";
  r = Probe({"direct", "alloc", Bytes(512 * kMiB)}, env);
  EXPECT_NE(r.err.find("refused"), std::string::npos) << r.err;
}

TEST_F(HookTest, DlsymNextKeepsTheCallersMeaning) {
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = "1g";
  RunResult r = Probe({"direct", "rtld-next"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_F(HookTest, NoLimitPassesEverythingThroughWithoutARegion) {
  Env env = hook.ProbeEnv();
  RunResult r = Probe({"direct", "alloc", Bytes(12 * kGiB)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(hook.MapRegion(), nullptr);
}

// Regression (issue 15): an allocation from another device's pool was charged to the current
// context's device.
TEST_F(HookTest, PoolAllocationIsChargedToThePoolsDevice) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's devices";
  const uint64_t ctx = ContextBytes();
  Env env = hook.ProbeEnv(kTwoDevices);
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(ctx + kGiB);
  Child holder({hook.probe(), "direct", "pool-device-hold", Bytes(64 * kMiB)}, env);
  ASSERT_TRUE(holder.WaitForLine("held", seconds(30)));
  const tessera_region* region = hook.MapRegion();
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->devices[0].used_bytes, ctx);  // the probe opens both devices
  EXPECT_EQ(region->devices[1].used_bytes, ctx + 64 * kMiB);
}

// Regression (issue 15): with no limit on a device, a saturated size used to wrap its usage, so
// that a failed cuMemAlloc(SIZE_MAX) left the region with less than the process holds.
TEST_F(HookTest, AllocationWithoutALimitNeverWrapsTheUsage) {
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT_1"] = "1g";  // device 0 has no limit
  Child holder({hook.probe(), "direct", "huge-hold"}, env);
  ASSERT_TRUE(holder.WaitForLine("held", seconds(30)));
  const tessera_region* region = hook.MapRegion();
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->devices[0].used_bytes, ContextBytes() + 2 * kMiB);
}

// Regression (issue 15): threads retaining the primary context first at once each recorded it,
// and one charge was lost in the table (charged for good).
TEST_F(HookTest, ConcurrentFirstRetainsChargeThePrimaryContextOnce) {
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = Bytes(ContextBytes() + kGiB);  // a second charge would fit
  for (int round = 0; round < 20; ++round) {  // the race is lost in about 1 run of 10
    RunResult r = Probe({"direct", "retain-race", "8", Bytes(ContextBytes())}, env);
    ASSERT_EQ(r.exit_code, 0) << "round " << round << "\n" << r.Describe();
  }
}

// Regression (issue 15): a limits file naming its device by a MIG- UUID refused every allocation
// (the library wrote every UUID GPU-...).
TEST_F(HookTest, LimitsFileNamingAMigUuidMapsItsDevice) {
  if (HookEnv::RealDriver()) GTEST_SKIP() << "needs simgpu's devices";
  std::string uuid = hook.Stat()["devices"][0]["uuid"];
  const uint64_t limit = ContextBytes() + 256 * kMiB;
  Env env = hook.ProbeEnv();
  env["TESSERA_LIMITS_FILE"] =
      hook.WriteLimits("limits", "version=2\ndevices=1\nuuid.0=MIG-" + uuid.substr(4) +
                                     "\nmemory.0=" + Bytes(limit) +
                                     "\ncores.0=0\nregion=" + hook.region_path() + "\n");
  RunResult r = Probe({"direct", "devices", Bytes(limit)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

TEST_F(HookTest, EnvironmentNeverRaisesTheLimitsFilesLimit) {
  Env env = hook.ProbeEnv();
  env["TESSERA_LIMITS_FILE"] = hook.WriteLimits(
      "limits", "version=2\ndevices=1\nmemory.0=" + Bytes(ContextBytes() + 256 * kMiB) +
                    "\ncores.0=0\nregion=" + hook.region_path() + "\n");
  env["CUDA_DEVICE_MEMORY_LIMIT"] = "8g";
  env["CUDA_DEVICE_MEMORY_LIMIT_0"] = "8g";
  RunResult r = Probe({"direct", "alloc", Bytes(512 * kMiB)}, env);
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
}

// Regression (issue 15): a FIFO as the limits file hung the first CUDA call.
TEST_F(HookTest, LimitsFileThatIsAFifoFailsAtOnce) {
  std::string fifo = hook.dir() + "/limits";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  Env env = hook.ProbeEnv();
  env["TESSERA_LIMITS_FILE"] = fifo;
  RunResult r = Probe({"direct", "init"}, env, seconds(10));
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
  EXPECT_NE(r.err.find("cannot read limits file " + fifo + ": not a regular file (a FIFO)"),
            std::string::npos)
      << r.err;
}

struct BadLimit {
  std::string name;
  std::string value;
  std::string message;  // part of the expected error line
};

class BadLimitTest : public ::testing::TestWithParam<BadLimit> {
 protected:
  HookEnv hook;
};

TEST_P(BadLimitTest, EveryCudaCallFailsWithAClearMessage) {
  const BadLimit& bad = GetParam();
  Env env = hook.ProbeEnv();
  env["CUDA_DEVICE_MEMORY_LIMIT"] = "1g";
  if (bad.name == "file") {
    env["TESSERA_LIMITS_FILE"] = hook.WriteFile("limits", bad.value);
  } else if (bad.name == "whole-file") {  // with the end marker: complete, but wrong inside
    env["TESSERA_LIMITS_FILE"] = hook.WriteLimits("limits", bad.value);
  } else {
    env[bad.name] = bad.value;
  }
  for (const char* route : {"direct", "runtime"}) {
    RunResult r = RunProgram({hook.probe(), route, "init"}, env, seconds(30));
    EXPECT_EQ(r.exit_code, 3) << route << ": cuInit must fail with CUDA_ERROR_NOT_INITIALIZED\n"
                              << r.Describe();
    EXPECT_NE(r.err.find("CUDA is disabled"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bad.message), std::string::npos) << r.err;
  }
  RunResult r = RunProgram({hook.probe(), "direct", "alloc", "1"}, env, seconds(30));
  EXPECT_NE(r.exit_code, 0) << r.Describe();
}

INSTANTIATE_TEST_SUITE_P(
    Values, BadLimitTest,
    ::testing::Values(
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT", "4Q", "unknown size suffix"},
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT", "lots", "not a number"},
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT", "", "empty value"},
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT", "-1g", "not a number"},
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT", "4GiBs", "unknown size suffix"},
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT", "99999999999999999999", "too large"},
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT", "20000000000t", "too large"},
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT_1", "1.5g", "CUDA_DEVICE_MEMORY_LIMIT_1"},
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT_x", "1g", "not a device index"},
        BadLimit{"CUDA_DEVICE_MEMORY_LIMIT_16", "1g", "not a device index"},
        BadLimit{"CUDA_DEVICE_SM_LIMIT", "101", "not a percent"},
        BadLimit{"TESSERA_CORE_MODE", "soft", "allowed: hard, elastic"},
        BadLimit{"TESSERA_LIMITS_FILE", "/nonexistent/limits", "cannot read limits file"},
        BadLimit{"file", "memory.0=1g\n", "the first key must be version=2"},
        BadLimit{"file", "version=1\n", "unsupported version"},
        BadLimit{"file", "version=3\n", "unsupported version"},
        BadLimit{"file", "version=2\nmemroy.0=1g\n", "unknown key \"memroy.0\""},
        BadLimit{"file", "version=2\nmemory.0=1 g\n", "unknown size suffix"},
        BadLimit{"whole-file", "version=2\ndevices=1\nmemory.0=0\ncores.0=0\nmemory.1=1g\n",
                 "device 1 is beyond devices=1 (allowed indexes: 0 to 0)"},
        BadLimit{"whole-file", "version=2\ndevices=0\nmemory.0=1g\n",
                 "device 0 is given but devices=0"},
        BadLimit{"file", "version=2\ncores.0=150\n", "a percent 0 to 100"},
        BadLimit{"file", "version=2\nmemory.0=1g\nmemory.0=2g\n", "duplicate key"},
        BadLimit{"file", "", "empty limits file"},
        // Regression (issue 15): files that used to mean a partial or no limit.
        BadLimit{"whole-file", "version=2\n", "devices=<count> is missing"},
        BadLimit{"whole-file", "version=2\ndevices=1\n", "memory.0 is missing"},
        BadLimit{"whole-file", "version=2\ndevices=1\nmemory.0=1g\n", "cores.0 is missing"},
        BadLimit{"file", "version=2\ndevices=1\ncores.0=0\nmemory.0=10", "no end=<bytes> line"},
        BadLimit{"file", "version=2\ndevices=1\ncores.0=0\nmemory.0=1g\nend=4",
                 "does not match the file"},
        BadLimit{"file", "version=2\ndevices=1\ncores.0=0\nmemory.0=1g\nend=40\n",
                 "does not match the file"},
        BadLimit{"file", "version=2\ndevices=1\ncores.0=0\nmemory.0=1g\nend=42\nmemory.1=0\n",
                 "text after the end= line"},
        BadLimit{"TESSERA_LIMITS_FILE", "", "TESSERA_LIMITS_FILE is set but empty"},
        BadLimit{"TESSERA_LIMITS_FILE", "/", "not a regular file (a directory)"}),
    [](const auto& info) { return "Case" + std::to_string(info.index); });

}  // namespace
}  // namespace tessera::hooktest
