#include "probe_api.h"

#include <dlfcn.h>

#include <algorithm>

namespace tessera::hooktest {

std::string LoadApi(const std::string& route, Api* api) {
  if (route == "direct") {
#define PROBE_DIRECT(field, symbol, ...) api->field = &symbol;
    PROBE_CUDA_API(PROBE_DIRECT)
    PROBE_NVML_API(PROBE_DIRECT)
#undef PROBE_DIRECT
    return "";
  }
  if (route != "runtime" && route != "runtime-ptds") return "unknown route " + route;
  unsigned long long flags = route == "runtime-ptds" ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                     : CU_GET_PROC_ADDRESS_DEFAULT;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) return std::string("dlopen libcuda.so.1: ") + dlerror();
  auto get_proc =
      reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(cuda, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) return "dlsym cuGetProcAddress_v2 failed";
  // A runtime asks at its own version: with the per-thread flag never before CUDA 7.0, which
  // brought the per-thread variants (a real driver resolves no such name asked for earlier).
  const int min_version = route == "runtime-ptds" ? 7000 : 0;
  std::string missing;
  // Each name that is not resolved, with what the driver answered: " name (rc R, status S)".
  auto note_missing = [&](const char* name, CUresult rc, CUdriverProcAddressQueryResult status) {
    missing += std::string(" ") + name + " (rc " + std::to_string(static_cast<int>(rc)) +
               ", status " + std::to_string(static_cast<int>(status)) + ")";
  };
#define PROBE_RUNTIME(field, symbol, name, version)                                     \
  {                                                                                     \
    void* fn = nullptr;                                                                 \
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;       \
    CUresult rc = get_proc(name, &fn, std::max(version, min_version), flags, &status);  \
    if (rc != CUDA_SUCCESS || fn == nullptr || status != CU_GET_PROC_ADDRESS_SUCCESS) { \
      note_missing(name, rc, status);                                                   \
    }                                                                                   \
    api->field = reinterpret_cast<decltype(api->field)>(fn);                            \
  }
  PROBE_CUDA_API(PROBE_RUNTIME)
#undef PROBE_RUNTIME
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return std::string("dlopen libnvidia-ml.so.1: ") + dlerror();
#define PROBE_NVML(field, symbol, name)                                   \
  api->field = reinterpret_cast<decltype(api->field)>(dlsym(nvml, name)); \
  if (api->field == nullptr) missing += std::string(" ") + name;
  PROBE_NVML_API(PROBE_NVML)
#undef PROBE_NVML
  return missing.empty() ? "" : "not resolved:" + missing;
}

}  // namespace tessera::hooktest
