/* The hooks of libtessera-cuda.so. Each takes, first, the real function it stands in front of:
 * exported symbols pass the driver's symbol of the same name, cuGetProcAddress and dlsym answers
 * pass the exact pointer the driver returned (procaddr.c binds a wrapper to it).
 *
 * Every hook passes straight through when called from inside another hook (the driver calling
 * its own exported functions), when no limit is configured, and for handles it did not see.
 *
 * Thread-safety: all hooks are thread-safe. */
#ifndef TESSERA_HOOK_HOOKS_H_
#define TESSERA_HOOK_HOOKS_H_

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "os.h"

#define HOOK_EXPORT __attribute__((visibility("default")))

/* Types the shared ABI header does not declare (passed through untouched). */
typedef struct CUexecAffinityParam_st CUexecAffinityParam;
typedef struct CUctxCreateParams_st CUctxCreateParams;

CUresult hook_init(void* real, unsigned int flags);
CUresult hook_get_proc_address_v1(void* real, const char* symbol, void** pfn, int version,
                                  unsigned long long flags);
CUresult hook_get_proc_address_v2(void* real, const char* symbol, void** pfn, int version,
                                  unsigned long long flags, CUdriverProcAddressQueryResult* status);

CUresult hook_mem_alloc(void* real, CUdeviceptr* dptr, size_t bytes);
CUresult hook_mem_alloc_pitch(void* real, CUdeviceptr* dptr, size_t* pitch, size_t width,
                              size_t height, unsigned int element_size);
CUresult hook_mem_alloc_managed(void* real, CUdeviceptr* dptr, size_t bytes, unsigned int flags);
CUresult hook_mem_free(void* real, CUdeviceptr dptr);
CUresult hook_mem_alloc_async(void* real, CUdeviceptr* dptr, size_t bytes, CUstream stream);
CUresult hook_mem_alloc_from_pool_async(void* real, CUdeviceptr* dptr, size_t bytes,
                                        CUmemoryPool pool, CUstream stream);
CUresult hook_mem_free_async(void* real, CUdeviceptr dptr, CUstream stream);
CUresult hook_mem_pool_create(void* real, CUmemoryPool* pool, const CUmemPoolProps* props);
CUresult hook_mem_pool_destroy(void* real, CUmemoryPool pool);
CUresult hook_mem_pool_trim(void* real, CUmemoryPool pool, size_t keep);
CUresult hook_device_pool(void* real, CUmemoryPool* pool, CUdevice dev);
CUresult hook_mem_create(void* real, CUmemGenericAllocationHandle* handle, size_t bytes,
                         const CUmemAllocationProp* prop, unsigned long long flags);
CUresult hook_mem_release(void* real, CUmemGenericAllocationHandle handle);
CUresult hook_mem_map(void* real, CUdeviceptr ptr, size_t size, size_t offset,
                      CUmemGenericAllocationHandle handle, unsigned long long flags);
CUresult hook_mem_unmap(void* real, CUdeviceptr ptr, size_t size);
CUresult hook_mem_retain(void* real, CUmemGenericAllocationHandle* handle, void* addr);
CUresult hook_array_create(void* real, CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc);
CUresult hook_array3d_create(void* real, CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc);
CUresult hook_array_destroy(void* real, CUarray array);
CUresult hook_mipmap_create(void* real, CUmipmappedArray* array,
                            const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned int levels);
CUresult hook_mipmap_destroy(void* real, CUmipmappedArray array);

CUresult hook_ctx_create_v2(void* real, CUcontext* ctx, unsigned int flags, CUdevice dev);
CUresult hook_ctx_create_v3(void* real, CUcontext* ctx, CUexecAffinityParam* params, int count,
                            unsigned int flags, CUdevice dev);
CUresult hook_ctx_create_v4(void* real, CUcontext* ctx, CUctxCreateParams* params,
                            unsigned int flags, CUdevice dev);
CUresult hook_ctx_destroy(void* real, CUcontext ctx);
CUresult hook_ctx_set_limit(void* real, CUlimit limit, size_t value);
CUresult hook_primary_retain(void* real, CUcontext* ctx, CUdevice dev);
CUresult hook_primary_release(void* real, CUdevice dev);
CUresult hook_primary_reset(void* real, CUdevice dev);

CUresult hook_mem_get_info(void* real, size_t* free_bytes, size_t* total_bytes);
CUresult hook_device_total_mem(void* real, size_t* bytes, CUdevice dev);
nvmlReturn_t hook_nvml_memory_info(void* real, nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t hook_nvml_memory_info_v2(void* real, nvmlDevice_t device, nvmlMemory_v2_t* memory);

CUresult hook_launch_kernel(void* real, CUfunction f, unsigned int gx, unsigned int gy,
                            unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
                            unsigned int shared, CUstream stream, void** params, void** extra);
CUresult hook_launch_kernel_ex(void* real, const CUlaunchConfig* config, CUfunction f,
                               void** params, void** extra);
CUresult hook_launch_cooperative(void* real, CUfunction f, unsigned int gx, unsigned int gy,
                                 unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
                                 unsigned int shared, CUstream stream, void** params);
CUresult hook_launch_cooperative_multi(void* real, CUDA_LAUNCH_PARAMS* list, unsigned int count,
                                       unsigned int flags);
CUresult hook_launch(void* real, CUfunction f);
CUresult hook_launch_grid(void* real, CUfunction f, int width, int height);
CUresult hook_launch_grid_async(void* real, CUfunction f, int width, int height, CUstream stream);
CUresult hook_graph_launch(void* real, CUgraphExec exec, CUstream stream);
CUresult hook_graph_instantiate(void* real, CUgraphExec* exec, CUgraph graph,
                                unsigned long long flags);
CUresult hook_graph_exec_destroy(void* real, CUgraphExec exec);
CUresult hook_graph_mem_trim(void* real, CUdevice dev);
CUresult hook_begin_capture_v1(void* real, CUstream stream);
CUresult hook_begin_capture(void* real, CUstream stream, CUstreamCaptureMode mode);
CUresult hook_begin_capture_to_graph(void* real, CUstream stream, CUgraph graph,
                                     const CUgraphNode* dependencies, const CUgraphEdgeData* edges,
                                     size_t count, CUstreamCaptureMode mode);
CUresult hook_end_capture(void* real, CUstream stream, CUgraph* graph);

/* For procaddr.c: the wrapper to hand out for `real`, the driver's answer for `symbol` at
 * `version` (cuGetProcAddress) or for the exact symbol name (version < 0, dlsym). Returns `real`
 * when the library does not wrap that name, NULL when it cannot (no free wrapper slot). */
void* hook_wrap(const char* symbol, int version, void* real);

/* Marks the calling thread as inside a hook for the rest of the scope (re-entrancy guard). */
#define HOOK_SCOPE()                                                                    \
  int hook_scope_saved_ __attribute__((cleanup(hook_scope_restore))) = tessera_in_hook; \
  tessera_in_hook = 1
static inline void hook_scope_restore(int* saved) {
  tessera_in_hook = *saved;
}

/* NVML's process lists (hooks_processes.c). */
nvmlReturn_t hook_nvml_processes_v1(void* real, nvmlDevice_t device, unsigned int* count,
                                    nvmlProcessInfo_v1_t* infos);
nvmlReturn_t hook_nvml_compute_processes(void* real, nvmlDevice_t device, unsigned int* count,
                                         nvmlProcessInfo_t* infos);
nvmlReturn_t hook_nvml_graphics_processes(void* real, nvmlDevice_t device, unsigned int* count,
                                          nvmlProcessInfo_t* infos);
nvmlReturn_t hook_nvml_mps_processes(void* real, nvmlDevice_t device, unsigned int* count,
                                     nvmlProcessInfo_t* infos);
nvmlReturn_t hook_nvml_process_utilization(void* real, nvmlDevice_t device,
                                           nvmlProcessUtilizationSample_t* samples,
                                           unsigned int* count, unsigned long long last_seen);

#endif /* TESSERA_HOOK_HOOKS_H_ */
