#include "replay_calls.h"

#include <unistd.h>

namespace tessera::replay {

void Calls::Record(const char* name, int rc, bool ok) {
  calls_.push_back({name, rc});
  if (ok) return;
  ++failed_calls_;
  std::fprintf(stderr, "replay[%d]: %s returned %d\n", static_cast<int>(getpid()), name, rc);
}

CUresult Calls::Note(const char* name, CUresult rc) {
  Record(name, static_cast<int>(rc), rc == CUDA_SUCCESS);
  return rc;
}

nvmlReturn_t Calls::Note(const char* name, nvmlReturn_t rc) {
  Record(name, static_cast<int>(rc), rc == NVML_SUCCESS);
  return rc;
}

void Calls::MeasurePeak(int ordinal, unsigned nvml_index) {
  size_t free = 0, total = 0;
  Note("cuMemGetInfo", api_.MemGetInfo(&free, &total));
  peak_["device"] = ordinal;
  peak_["cuda_used"] = total - free;
  peak_["cuda_total"] = total;
  nvmlDevice_t dev = nullptr;
  if (api_.NvmlInit() != NVML_SUCCESS || api_.NvmlHandleByIndex(nvml_index, &dev) != NVML_SUCCESS) {
    peak_["nvml_error"] = "no device";
    return;
  }
  nvmlProcessInfo_t procs[64];
  unsigned count = 64;
  if (api_.NvmlProcesses(dev, &count, procs) != NVML_SUCCESS) {
    peak_["nvml_error"] = "process list";
    return;
  }
  // This process by its PID in the driver's namespace: the only process of the job on its device.
  uint64_t mine = 0;
  for (unsigned i = 0; i < count; ++i) mine += procs[i].usedGpuMemory;
  peak_["nvml_processes"] = count;
  peak_["nvml_used_by_processes"] = mine;
}

nlohmann::json Calls::Result(int rank) const {
  return {{"rank", rank}, {"calls", calls_}, {"own_bytes", own_bytes_}, {"peak", peak_}};
}

}  // namespace tessera::replay
