// What one rank of a replay did: every driver call in order with its result, and the memory it
// saw at its peak. Bare and under the library, the same replay must give the same calls and
// results; the test compares the two and checks the memory against what the rank owns.
//
// Thread-compatible: one per rank process.
#ifndef TESSERA_HOOK_TESTS_REPLAY_REPLAY_CALLS_H_
#define TESSERA_HOOK_TESTS_REPLAY_REPLAY_CALLS_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../probe_api.h"

namespace tessera::replay {

class Calls {
 public:
  explicit Calls(const hooktest::Api& api) : api_(api) {}
  const hooktest::Api& api() const { return api_; }

  // Records `name` returning `rc`; returns rc.
  CUresult Note(const char* name, CUresult rc);
  nvmlReturn_t Note(const char* name, nvmlReturn_t rc);
  // Records an answer that may be an error: it is compared, not judged.
  void Answer(const char* name, CUresult rc) { Record(name, static_cast<int>(rc), true); }
  void Answer(const char* name, nvmlReturn_t rc) { Record(name, static_cast<int>(rc), true); }

  // Device memory this rank allocated (charged), added by the scenario as it allocates.
  void Own(uint64_t bytes) { own_bytes_ += bytes; }

  // Records, on `ordinal` (CUDA's) and `nvml_index` (NVML's), what cuMemGetInfo says is used and
  // what NVML lists for this process.
  void MeasurePeak(int ordinal, unsigned nvml_index);

  nlohmann::json Result(int rank) const;
  bool ok() const { return failed_calls_ == 0; }

 private:
  void Record(const char* name, int rc, bool ok);

  const hooktest::Api& api_;
  nlohmann::json calls_ = nlohmann::json::array();
  int failed_calls_ = 0;
  uint64_t own_bytes_ = 0;
  nlohmann::json peak_ = nlohmann::json::object();
};

// A rank's exit code when this machine cannot run the scenario (a system call refused); the
// program then exits with it too.
inline constexpr int kCannotRun = 77;

// The scenarios: each is the body of one rank. `size` ranks run it; rank r uses device r.
int VllmCustomAllReduce(class Rank& rank, Calls& calls);
int TorchTensorIpc(class Rank& rank, Calls& calls);
int NcclP2pCuMem(class Rank& rank, Calls& calls);
int TorchExpandableSegments(class Rank& rank, Calls& calls);
int NullArguments(class Rank& rank, Calls& calls);
int NcclNvls(class Rank& rank, Calls& calls);
int NcclHostCuMem(class Rank& rank, Calls& calls);
int VulkanInterop(class Rank& rank, Calls& calls);

}  // namespace tessera::replay

#endif  // TESSERA_HOOK_TESTS_REPLAY_REPLAY_CALLS_H_
