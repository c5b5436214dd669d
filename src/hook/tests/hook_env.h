// Shared set-up of the hook's process tests: where the built library, simgpu and the probe are,
// a per-test temporary directory (simgpu state, shared region, limits files), and the
// environment a probe runs with. Thread-safety: one instance per test.
#ifndef TESSERA_HOOK_TESTS_HOOK_ENV_H_
#define TESSERA_HOOK_TESTS_HOOK_ENV_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "abi/shared_region.h"
#include "process.h"

namespace tessera::hooktest {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// simgpu's machines for the hook's tests. Their contexts cost what one cost on a real GPU: 518 MiB
// (543162368 bytes by NVML's count of the process), measured on an NVIDIA H200 with driver
// 580.159.04 by scripts/gpu-check. Every limit must then hold the contexts of the test's processes
// beside what they allocate, on simgpu as on a GPU; tests size limits with HookEnv::ContextCost.
constexpr char kDevices[] = "count=1,memory=16GiB,ctxmem=518MiB";
constexpr char kTwoDevices[] = "count=2,memory=16GiB,ctxmem=518MiB";

class HookEnv {
 public:
  HookEnv();   // creates the temporary directory
  ~HookEnv();  // removes it

  std::string build_dir() const { return build_dir_; }
  std::string library() const { return build_dir_ + "/lib/libtessera-cuda.so"; }
  std::string probe() const { return build_dir_ + "/tests/hook_probe"; }
  std::string simgpu_cli() const { return build_dir_ + "/bin/simgpu"; }
  std::string dir() const { return dir_; }
  std::string region_path() const { return dir_ + "/region"; }

  // TESSERA_HOOK_REAL_DRIVER=1 (scripts/gpu-check): probes use the system's driver, not simgpu;
  // tests that need simgpu's devices or its `stat` skip themselves.
  static bool RealDriver();

  // What one context costs in device memory on device 0 of simgpu's `devices` (of the real GPU
  // when RealDriver()): measured once per machine and program by hook_probe's context-cost, without
  // the library, as the library measures it (NVML's memory of the process, else the device's free
  // memory). Throws std::runtime_error when it cannot be measured.
  static uint64_t ContextCost(const std::string& devices = kDevices);

  // The environment of a probe: simgpu with `devices` (or the real driver), the library
  // preloaded, the region in the temporary directory, nothing inherited but PATH.
  Env ProbeEnv(const std::string& devices = kDevices) const;

  // Writes a file in the temporary directory; returns its path.
  std::string WriteFile(const std::string& name, const std::string& text) const;

  // Writes a limits file: `body` followed by the end marker the format requires (the byte count of
  // `body`); returns its path.
  std::string WriteLimits(const std::string& name, const std::string& body) const;

  // `simgpu stat` for the state of this test's probes.
  nlohmann::json Stat(const std::string& devices = kDevices) const;

  // Maps the shared region read-only, its spill appendix too (nullptr when it does not exist yet).
  const tessera_region* MapRegion();
  // The region's spill appendix (nullptr when the region does not exist yet).
  const tessera_region_spill* MapSpill();

 private:
  std::string build_dir_;
  std::string dir_;
  void* region_ = nullptr;
};

}  // namespace tessera::hooktest

#endif  // TESSERA_HOOK_TESTS_HOOK_ENV_H_
