#include "probe_api.h"

#include <dlfcn.h>

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
  std::string missing;
#define PROBE_RUNTIME(field, symbol, name, version)                                      \
  {                                                                                      \
    void* fn = nullptr;                                                                  \
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;        \
    if (get_proc(name, &fn, version, flags, &status) != CUDA_SUCCESS || fn == nullptr || \
        status != CU_GET_PROC_ADDRESS_SUCCESS) {                                         \
      missing += std::string(" ") + name;                                                \
    }                                                                                    \
    api->field = reinterpret_cast<decltype(api->field)>(fn);                             \
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
