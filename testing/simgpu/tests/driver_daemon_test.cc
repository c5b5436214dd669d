// The driver daemon (`simgpu driver`): processes in PID namespaces of their own, as in containers,
// are known by their host PIDs, and the daemon frees their memory when they die. Host-side checks
// go through NVML, as a node agent's would. Without the daemon nothing changes: that is the rest
// of the simgpu suite.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "clock.h"
#include "sim_test_env.h"

namespace simgpu::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

using ProcessMemory = std::map<unsigned, unsigned long long>;  // host PID -> bytes on device 0

// Polls `done` every 10 ms until it holds or `seconds` have passed; whether it held.
bool Eventually(const std::function<bool()>& done, double seconds = 5) {
  uint64_t deadline = NowNs() + static_cast<uint64_t>(seconds * 1e9);
  while (!done()) {
    if (NowNs() > deadline) return false;
    SleepForNs(10'000'000);
  }
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

nvmlDevice_t Device0() {
  nvmlDevice_t dev = nullptr;
  nvmlDeviceGetHandleByIndex_v2(0, &dev);
  return dev;
}

ProcessMemory NvmlProcesses() {
  nvmlProcessInfo_t infos[64];
  unsigned n = 64;
  if (nvmlDeviceGetComputeRunningProcesses_v3(Device0(), &n, infos) != NVML_SUCCESS) {
    return {{0, 0}};  // matches no expectation
  }
  ProcessMemory out;
  for (unsigned i = 0; i < n; ++i) out[infos[i].pid] = infos[i].usedGpuMemory;
  return out;
}

unsigned long long NvmlUsedBytes() {
  nvmlMemory_t memory{};
  return nvmlDeviceGetMemoryInfo(Device0(), &memory) == NVML_SUCCESS ? memory.used : ~0ull;
}

// Whether NVML has a utilisation sample of `pid` on device 0.
bool HasUtilizationSample(unsigned pid) {
  nvmlProcessUtilizationSample_t samples[64];
  unsigned n = 64;
  if (nvmlDeviceGetProcessUtilization(Device0(), samples, &n, 0) != NVML_SUCCESS) return false;
  for (unsigned i = 0; i < n; ++i) {
    if (samples[i].pid == pid && samples[i].smUtil > 0) return true;
  }
  return false;
}

// `simgpu driver` for the state directory in SIMGPU_STATE, its stderr in <dir>/driver.log.
class DriverDaemon {
 public:
  explicit DriverDaemon(const std::string& dir) : log_(dir + "/driver.log") {
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, STDERR_FILENO);
      execl(SIMGPU_CLI, SIMGPU_CLI, "driver", static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~DriverDaemon() {
    if (pid_ > 0) Stop();
  }
  // Whether it serves its socket within a few seconds.
  bool WaitServing() const {
    return Eventually([&] { return Log().find("serving") != std::string::npos; });
  }
  // SIGTERM; its exit status.
  int Stop() {
    kill(pid_, SIGTERM);
    int status = Wait(pid_);
    pid_ = 0;
    return status;
  }
  std::string Log() const { return ReadFile(log_); }

 private:
  std::string log_;
  pid_t pid_ = 0;
};

// memory_holder run by `unshare --pid --fork --mount-proc`: in a new PID namespace, where it is
// PID 1. Killed when destroyed.
class ContainedHolder {
 public:
  ContainedHolder(int mib, int kernel_us) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    std::string mib_arg = std::to_string(mib), us_arg = std::to_string(kernel_us);
    unshare_pid_ = fork();
    if (unshare_pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      execlp("unshare", "unshare", "--pid", "--fork", "--mount-proc", SIMGPU_HOLDER,
             mib_arg.c_str(), us_arg.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    std::string line;
    char c;
    while (read(fds[0], &c, 1) == 1 && c != '\n') line += c;
    close(fds[0]);
    if (sscanf(line.c_str(), "ready %d", &namespace_pid_) != 1) return;
    host_pid_ = ChildOf(unshare_pid_);
  }
  ~ContainedHolder() {
    Kill();
    if (unshare_pid_ > 0) {
      kill(unshare_pid_, SIGKILL);
      waitpid(unshare_pid_, nullptr, 0);
    }
  }
  void Kill() {
    if (host_pid_ > 0) kill(host_pid_, SIGKILL);
  }

  int namespace_pid() const { return namespace_pid_; }  // what the holder itself sees
  int host_pid() const { return host_pid_; }            // 0 when it did not get ready

 private:
  // The process whose parent is `parent` (unshare's forked child), found in the host's /proc.
  static int ChildOf(int parent) {
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string stat = ReadFile("/proc/" + name + "/stat");
      size_t paren = stat.rfind(')');
      int ppid = 0;
      if (paren != std::string::npos && sscanf(stat.c_str() + paren + 1, " %*c %d", &ppid) == 1 &&
          ppid == parent) {
        return std::stoi(name);
      }
    }
    return 0;
  }

  pid_t unshare_pid_ = 0;
  int namespace_pid_ = 0;
  int host_pid_ = 0;
};

// Initialises the driver and makes device 0's primary context current. 0 on success.
int UseDevice0() {
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS) return 10;
  if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS) return 11;
  return cuCtxSetCurrent(ctx) == CUDA_SUCCESS ? 0 : 12;
}

class SimgpuDriverDaemon : public ::testing::Test {
 protected:
  SimgpuDriverDaemon() : state_("count=1,memory=4GiB"), daemon_(state_.dir()) {}
  void SetUp() override {
    ASSERT_TRUE(daemon_.WaitServing()) << daemon_.Log();
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);  // connects: this process is known by its host PID
  }
  void TearDown() override {
    EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
    EXPECT_EQ(daemon_.Stop(), 0);
    EXPECT_FALSE(std::filesystem::exists(state_.dir() + "/driver.sock"));
    if (HasFailure()) printf("daemon log:\n%s", daemon_.Log().c_str());
  }
  void SkipWithoutPidNamespaces() {
    if (system("unshare --pid --fork --mount-proc true >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "`unshare --pid --fork --mount-proc` is not permitted here (needs root, or "
                      "CAP_SYS_ADMIN in a user namespace); PID namespaces cannot be tested";
    }
  }

  PrivateState state_;
  DriverDaemon daemon_;
};

TEST_F(SimgpuDriverDaemon, ContainedProcessIsKnownByItsHostPidAndFreedWhenKilled) {
  SkipWithoutPidNamespaces();
  ContainedHolder holder(512, 200'000);
  ASSERT_GT(holder.host_pid(), 0) << "memory_holder did not get ready";
  EXPECT_EQ(holder.namespace_pid(), 1);
  unsigned host = static_cast<unsigned>(holder.host_pid());
  EXPECT_EQ(NvmlProcesses(), (ProcessMemory{{host, 512 * kMiB}}));
  EXPECT_EQ(NvmlUsedBytes(), 512 * kMiB);
  EXPECT_TRUE(Eventually([&] { return HasUtilizationSample(host); }))
      << "no utilisation sample of host PID " << host;
  EXPECT_NE(daemon_.Log().find("pid " + std::to_string(host) + " connected"), std::string::npos);

  holder.Kill();
  EXPECT_TRUE(Eventually([] { return NvmlUsedBytes() == 0 && NvmlProcesses().empty(); }))
      << "used " << NvmlUsedBytes();
  EXPECT_NE(daemon_.Log().find("pid " + std::to_string(host) + " disconnected"), std::string::npos);
}

TEST_F(SimgpuDriverDaemon, TwoNamespacesWithTheSamePidAreTrackedApart) {
  SkipWithoutPidNamespaces();
  ContainedHolder a(256, 0);
  ContainedHolder b(768, 0);
  ASSERT_GT(a.host_pid(), 0);
  ASSERT_GT(b.host_pid(), 0);
  EXPECT_EQ(a.namespace_pid(), b.namespace_pid());
  unsigned host_a = static_cast<unsigned>(a.host_pid()),
           host_b = static_cast<unsigned>(b.host_pid());
  EXPECT_EQ(NvmlProcesses(), (ProcessMemory{{host_a, 256 * kMiB}, {host_b, 768 * kMiB}}));

  a.Kill();
  EXPECT_TRUE(Eventually([&] { return NvmlProcesses() == ProcessMemory{{host_b, 768 * kMiB}}; }));
  EXPECT_EQ(NvmlUsedBytes(), 768 * kMiB);
  b.Kill();
  EXPECT_TRUE(Eventually([] { return NvmlUsedBytes() == 0 && NvmlProcesses().empty(); }));
}

// A forked child connects anew: it is a process of its own, and it does not keep its parent's
// connection open (the parent's memory is freed when the parent dies, though the child lives). The
// dead parent stays a zombie until reaped, so only its closed connection can free it.
TEST_F(SimgpuDriverDaemon, ForkedChildIsAProcessOfItsOwn) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t parent = Spawn([&] {
    if (int rc = UseDevice0(); rc != 0) return rc;
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, 100 * kMiB) != CUDA_SUCCESS) return 20;
    pid_t child = fork();
    if (child == 0) {
      CUdeviceptr q = 0;
      if (UseDevice0() != 0 || cuMemAlloc(&q, 200 * kMiB) != CUDA_SUCCESS) _exit(21);
      pid_t me = getpid();
      if (write(fds[1], &me, sizeof(me)) != sizeof(me)) _exit(22);
      for (;;) pause();
    }
    for (;;) pause();
  });
  ChildGuard parent_guard(parent);
  pid_t child = 0;
  ASSERT_EQ(read(fds[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  ASSERT_GT(child, 0);
  auto up = static_cast<unsigned>(parent), uc = static_cast<unsigned>(child);
  EXPECT_EQ(NvmlProcesses(), (ProcessMemory{{up, 100 * kMiB}, {uc, 200 * kMiB}}));

  kill(parent, SIGKILL);
  EXPECT_TRUE(Eventually([&] { return NvmlProcesses() == ProcessMemory{{uc, 200 * kMiB}}; }));
  kill(child, SIGKILL);
  EXPECT_TRUE(Eventually([] { return NvmlUsedBytes() == 0 && NvmlProcesses().empty(); }));
  close(fds[0]);
  close(fds[1]);
}

// libcuda and libnvidia-ml each connect; the process is freed only when both have closed. The
// second nvmlInit waits for the daemon's answer, which comes after it has seen the first close.
TEST_F(SimgpuDriverDaemon, NvmlShutdownKeepsTheProcesssCudaMemory) {
  pid_t child = Spawn([] {
    CUdeviceptr p = 0;
    if (UseDevice0() != 0 || cuMemAlloc(&p, 64 * kMiB) != CUDA_SUCCESS) return 30;
    nvmlShutdown();  // NVML as inherited from the test process: initialised once
    if (nvmlInit_v2() != NVML_SUCCESS || nvmlShutdown() != NVML_SUCCESS) return 31;
    if (nvmlInit_v2() != NVML_SUCCESS) return 32;
    unsigned long long used = NvmlUsedBytes();
    nvmlShutdown();
    return used == 64 * kMiB ? 0 : 33;
  });
  EXPECT_EQ(Wait(child), 0);
  EXPECT_TRUE(Eventually([] { return NvmlUsedBytes() == 0; }));  // it exited
}

// Binds a unix socket at `path` and closes it: the file stays, nothing listens.
void MakeStaleSocket(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
}

// As with a missing kernel module: a socket nobody serves fails cuInit and nvmlInit (each in a
// child: a failed init is remembered). A daemon replaces the stale socket; a second is refused.
TEST(SimgpuDriverSocket, AStaleSocketFailsInitUntilADaemonServesIt) {
  PrivateState state("count=1,memory=4GiB");
  MakeStaleSocket(state.dir() + "/driver.sock");
  EXPECT_EQ(Wait(Spawn([] { return cuInit(0) == CUDA_ERROR_OPERATING_SYSTEM ? 0 : 1; })), 0);
  EXPECT_EQ(Wait(Spawn([] { return nvmlInit_v2() == NVML_ERROR_DRIVER_NOT_LOADED ? 0 : 1; })), 0);

  DriverDaemon daemon(state.dir());
  ASSERT_TRUE(daemon.WaitServing()) << daemon.Log();
  EXPECT_EQ(Wait(Spawn([] { return cuInit(0) == CUDA_SUCCESS ? 0 : 1; })), 0);
  std::string second = std::string(SIMGPU_CLI) + " driver 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(system(second.c_str())), 1);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace simgpu::testing
