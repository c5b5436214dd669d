// The NVIDIA driver as gpu_check sees it: libcuda.so.1 and libnvidia-ml.so.1 opened with dlopen
// and their entry points resolved with dlsym, so the program builds without a CUDA toolkit and
// runs wherever a driver is. Under LD_PRELOAD=libtessera-cuda.so the library's dlsym hands back
// its wrappers for the calls it intercepts (docs/in-container-library.md, "Interception"), so
// the launches and allocations made here are the ones it governs.
//
// Versioned calls are named by their current symbol (cuMemAlloc_v2), as cuda.h's macros do.
// Thread-compatible after loading: the tables are read only.
#pragma once

#include <string>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "common/status.h"

namespace tessera::gpu_check {

// clang-format off
#define GPU_CHECK_CUDA_CALLS(X)         \
  X(cuInit)                             \
  X(cuGetErrorName)                     \
  X(cuDeviceGet)                        \
  X(cuDeviceGetAttribute)               \
  X(cuDevicePrimaryCtxRetain)           \
  X(cuCtxSetCurrent)                    \
  X(cuCtxSynchronize)                   \
  X(cuModuleLoadData)                   \
  X(cuModuleLoadDataEx)                 \
  X(cuModuleGetFunction)                \
  X(cuMemAlloc_v2)                      \
  X(cuMemFree_v2)                       \
  X(cuMemsetD8_v2)                      \
  X(cuMemcpyDtoH_v2)                    \
  X(cuMemGetInfo_v2)                    \
  X(cuStreamCreate)                     \
  X(cuStreamSynchronize)                \
  X(cuEventCreate)                      \
  X(cuEventRecord)                      \
  X(cuEventSynchronize)                 \
  X(cuEventElapsedTime)                 \
  X(cuEventDestroy_v2)                  \
  X(cuLaunchKernel)

#define GPU_CHECK_NVML_CALLS(X)         \
  X(nvmlInit_v2)                        \
  X(nvmlShutdown)                       \
  X(nvmlErrorString)                    \
  X(nvmlDeviceGetHandleByIndex_v2)      \
  X(nvmlDeviceGetProcessUtilization)
// clang-format on

// The driver API's entry points.
struct Cuda {
#define GPU_CHECK_MEMBER(name) decltype(&::name) name = nullptr;
  GPU_CHECK_CUDA_CALLS(GPU_CHECK_MEMBER)
#undef GPU_CHECK_MEMBER

  // "cuLaunchKernel(...): CUDA_ERROR_LAUNCH_FAILED (719)" for a failed call.
  std::string Describe(CUresult rc) const;
};

// NVML's entry points.
struct Nvml {
#define GPU_CHECK_MEMBER(name) decltype(&::name) name = nullptr;
  GPU_CHECK_NVML_CALLS(GPU_CHECK_MEMBER)
#undef GPU_CHECK_MEMBER
};

// Opens `path` and resolves every call. NotFound when the library cannot be loaded (no driver),
// FailedPrecondition when it lacks a call (a driver too old); the message says which and why.
// The library stays loaded for the life of the process.
Result<Cuda> LoadCuda(const std::string& path);
Result<Nvml> LoadNvml(const std::string& path);

// CUDA_SUCCESS: OK; otherwise Internal("<what>: <error name> (<code>)").
Status CudaStatus(const Cuda& cuda, CUresult rc, const char* what);

}  // namespace tessera::gpu_check

// Returns from the enclosing function (Status or Result) when the driver call fails.
#define CU_RETURN_IF_ERROR(cuda, call)                                    \
  do {                                                                    \
    CUresult cu_rc_ = (call);                                             \
    if (cu_rc_ != CUDA_SUCCESS) return CudaStatus((cuda), cu_rc_, #call); \
  } while (0)
