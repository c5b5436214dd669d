/* The real driver and NVML functions that libtessera-cuda.so calls, resolved lazily by name in
 * one table, and the real dlsym.
 *
 * Nothing here loads a library until a CUDA or NVML hook runs, so a process that never uses CUDA
 * never opens libcuda.so.1. Resolution is idempotent and lock-free (racing threads store the same
 * pointer).
 *
 * Thread-safety: every function is thread-safe. */
#ifndef TESSERA_HOOK_REAL_H_
#define TESSERA_HOOK_REAL_H_

#include "abi/cuda_driver.h"
#include "abi/nvml.h"

/* Driver symbols the library calls itself or forwards exported hooks to. */
// clang-format off
#define HOOK_REAL_CUDA(X)          \
  X(cuInit)                        \
  X(cuGetProcAddress)              \
  X(cuGetProcAddress_v2)           \
  X(cuDeviceGetCount)              \
  X(cuDeviceGet)                   \
  X(cuDeviceGetUuid)               \
  X(cuDeviceGetUuid_v2)            \
  X(cuDeviceTotalMem_v2)           \
  X(cuCtxGetDevice)                \
  X(cuCtxGetCurrent)               \
  X(cuMemGetInfo_v2)               \
  X(cuMemGetAllocationGranularity) \
  X(cuMemAlloc_v2)                 \
  X(cuMemAllocPitch_v2)            \
  X(cuMemAllocManaged)             \
  X(cuMemFree_v2)                  \
  X(cuMemHostAlloc)                \
  X(cuMemHostGetDevicePointer_v2)  \
  X(cuMemFreeHost)                 \
  X(cuDeviceGetAttribute)          \
  X(cuCtxSynchronize)              \
  X(cuMemAllocAsync)               \
  X(cuMemAllocAsync_ptsz)          \
  X(cuMemAllocFromPoolAsync)       \
  X(cuMemAllocFromPoolAsync_ptsz)  \
  X(cuMemFreeAsync)                \
  X(cuMemFreeAsync_ptsz)           \
  X(cuMemPoolCreate)               \
  X(cuMemPoolDestroy)              \
  X(cuMemPoolTrimTo)               \
  X(cuMemPoolGetAttribute)         \
  X(cuDeviceGetMemPool)            \
  X(cuDeviceGetDefaultMemPool)     \
  X(cuStreamSynchronize)           \
  X(cuMemCreate)                   \
  X(cuMemRelease)                  \
  X(cuMemMap)                      \
  X(cuMemUnmap)                    \
  X(cuMemRetainAllocationHandle)   \
  X(cuArrayCreate_v2)              \
  X(cuArray3DCreate_v2)            \
  X(cuArrayDestroy)                \
  X(cuMipmappedArrayCreate)        \
  X(cuMipmappedArrayDestroy)       \
  X(cuCtxCreate_v2)                \
  X(cuCtxCreate_v3)                \
  X(cuCtxCreate_v4)                \
  X(cuCtxDestroy_v2)               \
  X(cuCtxSetLimit)                 \
  X(cuCtxGetLimit)                 \
  X(cuDevicePrimaryCtxRetain)      \
  X(cuDevicePrimaryCtxRelease)     \
  X(cuDevicePrimaryCtxRelease_v2)  \
  X(cuDevicePrimaryCtxReset)       \
  X(cuDevicePrimaryCtxReset_v2)    \
  X(cuDevicePrimaryCtxGetState)    \
  X(cuEventCreate)                 \
  X(cuEventRecord)                 \
  X(cuEventQuery)                  \
  X(cuEventSynchronize)            \
  X(cuEventElapsedTime)            \
  X(cuEventDestroy_v2)             \
  X(cuStreamIsCapturing)           \
  X(cuStreamQuery)                 \
  X(cuStreamBeginCapture)          \
  X(cuStreamBeginCapture_v2)       \
  X(cuStreamBeginCapture_v2_ptsz)  \
  X(cuStreamBeginCaptureToGraph)   \
  X(cuStreamBeginCaptureToGraph_ptsz) \
  X(cuStreamEndCapture)            \
  X(cuStreamEndCapture_ptsz)       \
  X(cuThreadExchangeStreamCaptureMode) \
  X(cuLaunchKernel)                \
  X(cuLaunchKernel_ptsz)           \
  X(cuLaunchKernelEx)              \
  X(cuLaunchKernelEx_ptsz)         \
  X(cuLaunchCooperativeKernel)     \
  X(cuLaunchCooperativeKernel_ptsz) \
  X(cuLaunchCooperativeKernelMultiDevice) \
  X(cuLaunch)                      \
  X(cuLaunchGrid)                  \
  X(cuLaunchGridAsync)             \
  X(cuGraphLaunch)                 \
  X(cuGraphInstantiateWithFlags)   \
  X(cuGraphExecDestroy)            \
  X(cuGraphGetNodes)               \
  X(cuGraphNodeGetType)            \
  X(cuGraphMemAllocNodeGetParams)  \
  X(cuDeviceGraphMemTrim)          \
  X(cuDeviceGetGraphMemAttribute)  \
  X(cuGraphLaunch_ptsz)

#define HOOK_REAL_NVML(X)       \
  X(nvmlInit_v2)                \
  X(nvmlDeviceGetHandleByUUID)  \
  X(nvmlDeviceGetIndex)         \
  X(nvmlDeviceGetUUID)          \
  X(nvmlDeviceGetMemoryInfo)    \
  X(nvmlDeviceGetMemoryInfo_v2) \
  X(nvmlDeviceGetComputeRunningProcesses) \
  X(nvmlDeviceGetComputeRunningProcesses_v2) \
  X(nvmlDeviceGetComputeRunningProcesses_v3) \
  X(nvmlDeviceGetGraphicsRunningProcesses) \
  X(nvmlDeviceGetGraphicsRunningProcesses_v2) \
  X(nvmlDeviceGetGraphicsRunningProcesses_v3) \
  X(nvmlDeviceGetMPSComputeRunningProcesses) \
  X(nvmlDeviceGetMPSComputeRunningProcesses_v2) \
  X(nvmlDeviceGetMPSComputeRunningProcesses_v3) \
  X(nvmlDeviceGetProcessUtilization)
// clang-format on

enum hook_real_id {
#define HOOK_REAL_ENUM(name) REAL_##name,
  HOOK_REAL_CUDA(HOOK_REAL_ENUM) REAL_CUDA_END,
  HOOK_REAL_NVML(HOOK_REAL_ENUM) REAL_COUNT
#undef HOOK_REAL_ENUM
};

/* The resolved functions, for real_fn's inline fast path: NULL until looked up, REAL_NOT_FOUND
 * when looked up and absent. */
#define REAL_NOT_FOUND ((void*)1)
extern void* real_fns[REAL_COUNT] __attribute__((visibility("hidden")));
void* real_resolve(enum hook_real_id id);

/* The real function `id`, or NULL when the library does not have it. Inline: every hook calls it
 * at least once per call. */
static inline void* real_fn(enum hook_real_id id) {
  void* fn = __atomic_load_n(&real_fns[id], __ATOMIC_ACQUIRE);
  if (__builtin_expect(fn != NULL && fn != REAL_NOT_FOUND, 1)) return fn;
  return fn == REAL_NOT_FOUND ? NULL : real_resolve(id);
}

/* Resolves every driver function of the table now (call once the driver is loaded): the first
 * call of each hook then finds its function without a symbol lookup. */
void real_resolve_cuda(void);

/* glibc's dlsym (dlvsym(RTLD_NEXT, "dlsym", <base version>)). */
void* real_dlsym(void* handle, const char* name);

/* Handles of libcuda.so.1 / libnvidia-ml.so.1 (opened on first use), or NULL. */
void* real_cuda_library(void);
void* real_nvml_library(void);

/* Shorthand: REAL(cuMemAlloc_v2) is the real function with its own type. */
#define REAL(name) ((__typeof__(&name))real_fn(REAL_##name))

#endif /* TESSERA_HOOK_REAL_H_ */
