#include "mode_support.h"

#include <cstdio>

namespace tessera::gpu_check {

const Cuda* LoadCudaOrExplain(const std::string& path) {
  static std::unique_ptr<Cuda> cuda;
  if (cuda) return cuda.get();
  Result<Cuda> loaded = LoadCuda(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "gpu_check: %s\n", loaded.status().message().c_str());
    return nullptr;
  }
  cuda = std::make_unique<Cuda>(*loaded);
  return cuda.get();
}

const Nvml* LoadNvmlOrExplain(const std::string& path) {
  static std::unique_ptr<Nvml> nvml;
  if (nvml) return nvml.get();
  Result<Nvml> loaded = LoadNvml(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "gpu_check: %s\n", loaded.status().message().c_str());
    return nullptr;
  }
  nvml = std::make_unique<Nvml>(*loaded);
  return nvml.get();
}

int FailWith(Reporter& r, const std::string& mode, const Status& status) {
  r.Emit(Check(mode + ".error", Verdict::kFail).Add("error", status.message()));
  return 1;
}

}  // namespace tessera::gpu_check
