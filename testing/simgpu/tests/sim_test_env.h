// Helpers for simgpu's GoogleTest programs: a private state directory per test, child processes
// that run a function and exit, and reading the state the way `simgpu stat` does.
// Thread-compatible: used from the test's main thread.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "common/fd_passing.h"
#include "shared_state.h"
#include "stat_json.h"

namespace simgpu::testing {

// Creates a fresh state directory, points SIMGPU_STATE at it and sets SIMGPU_DEVICES; removes the
// directory when destroyed.
class PrivateState {
 public:
  explicit PrivateState(const std::string& devices) {
    char tmpl[] = "/tmp/simgpu-gtest-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("SIMGPU_STATE", dir_.c_str(), 1);
    setenv("SIMGPU_DEVICES", devices.c_str(), 1);
  }
  ~PrivateState() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& dir() const { return dir_; }

  // The state as `simgpu stat` reports it (opened once, without insisting on a spec).
  nlohmann::json Stat() {
    if (state_ == nullptr) {
      auto spec = ParseDeviceSpec(getenv("SIMGPU_DEVICES"));
      auto state = SharedState::Open(dir_, *spec, false);
      if (!state.ok()) return nlohmann::json{{"error", state.status().message()}};
      state_ = *state;
    }
    return nlohmann::json::parse(StatJson(*state_));
  }

 private:
  std::string dir_;
  SharedState* state_ = nullptr;  // mapped for the rest of the test program
};

// Forks a child that runs `body` and exits with its return value (before any CUDA call in the
// parent, or after: the child's driver starts uninitialised either way).
inline pid_t Spawn(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

// Initialises the driver and makes device `ordinal`'s primary context current. 0 on success, or
// 10, 11, 12: which step failed.
inline int UseDevice(int ordinal) {
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS) return 10;
  if (cuDevicePrimaryCtxRetain(&ctx, ordinal) != CUDA_SUCCESS) return 11;
  if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return 12;
  return 0;
}

using tessera::ReceiveFd;
using tessera::SendFd;

// Device 0's used memory by NVML (0 when NVML fails).
inline uint64_t DeviceUsed() {
  nvmlDevice_t dev;
  nvmlMemory_t mem;
  if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(0, &dev) != NVML_SUCCESS ||
      nvmlDeviceGetMemoryInfo(dev, &mem) != NVML_SUCCESS) {
    return 0;
  }
  return mem.used;
}

// Kills and reaps a child when it goes out of scope (a failed assertion must not leave it).
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  // Waits for the child (see Wait below); the guard then leaves it alone.
  int Reap();
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;

 private:
  pid_t pid_;
};

// A pipe a child writes one byte to when it is ready and reads one byte from to go on.
struct Handshake {
  int ready[2];
  int go[2];
  Handshake() {
    EXPECT_EQ(pipe(ready), 0);
    EXPECT_EQ(pipe(go), 0);
  }
  ~Handshake() {
    for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
  }
  // In the child.
  void SignalAndWait() {
    char c = 1;
    (void)!write(ready[1], &c, 1);
    (void)!read(go[0], &c, 1);
  }
  // In the parent.
  bool AwaitReady() {
    char c = 0;
    return read(ready[0], &c, 1) == 1 && c == 1;
  }
  void Release() {
    char c = 1;
    (void)!write(go[1], &c, 1);
  }
};

// Waits for `pid`; its exit status, or 128 + signal.
inline int Wait(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline int ChildGuard::Reap() {
  int status = Wait(pid_);
  pid_ = 0;
  return status;
}

}  // namespace simgpu::testing
