#include "driver.h"

#include <dlfcn.h>

namespace tessera::gpu_check {

namespace {

// dlopen with RTLD_NOW: a driver library that loads but cannot resolve its own symbols is
// refused here, not at its first call.
Result<void*> Open(const std::string& path, const char* what) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return NotFound("cannot load " + path + " (" + what + "): " + (why ? why : "unknown error") +
                    "; gpu_check needs the NVIDIA driver installed (nvidia-smi works)");
  }
  return handle;
}

template <typename Fn>
Status Resolve(void* handle, const std::string& path, const char* name, Fn* fn) {
  dlerror();
  void* p = dlsym(handle, name);
  if (p == nullptr) {
    return FailedPrecondition(path + " has no " + name + ": the driver is too old for gpu_check");
  }
  *fn = reinterpret_cast<Fn>(p);
  return Status::Ok();
}

}  // namespace

Result<Cuda> LoadCuda(const std::string& path) {
  ASSIGN_OR_RETURN(void* handle, Open(path, "the CUDA driver"));
  Cuda c;
#define GPU_CHECK_RESOLVE(name) RETURN_IF_ERROR(Resolve(handle, path, #name, &c.name));
  GPU_CHECK_CUDA_CALLS(GPU_CHECK_RESOLVE)
#undef GPU_CHECK_RESOLVE
  return c;
}

Result<Nvml> LoadNvml(const std::string& path) {
  ASSIGN_OR_RETURN(void* handle, Open(path, "NVML"));
  Nvml n;
#define GPU_CHECK_RESOLVE(name) RETURN_IF_ERROR(Resolve(handle, path, #name, &n.name));
  GPU_CHECK_NVML_CALLS(GPU_CHECK_RESOLVE)
#undef GPU_CHECK_RESOLVE
  return n;
}

std::string Cuda::Describe(CUresult rc) const {
  const char* name = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(rc, &name) != CUDA_SUCCESS || name == nullptr) {
    name = "CUDA error";
  }
  return std::string(name) + " (" + std::to_string(static_cast<int>(rc)) + ")";
}

Status CudaStatus(const Cuda& cuda, CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return Status::Ok();
  return Internal(std::string(what) + ": " + cuda.Describe(rc));
}

}  // namespace tessera::gpu_check
