/* dlsym and cuGetProcAddress: how runtime-style programs reach the driver.
 *
 * The CUDA runtime dlopens libcuda.so.1, takes cuGetProcAddress_v2 with dlsym and then asks it for
 * every entry point with a version and flags. Both answers are intercepted here: the real
 * function is asked first, with the caller's arguments, and when the name is one the library
 * wraps, the caller gets a wrapper bound to the exact pointer the driver returned. Each wrapped
 * family (one ABI) has SLOTS wrapper functions, each bound to one real pointer at first use, so
 * cuMemAllocAsync and cuMemAllocAsync_ptsz (different real functions) get different wrappers.
 * A caller asking at a version older than the ABI the library wraps gets the real pointer.
 *
 * Nothing here initialises anything heavy: a lookup is a table scan and a compare-and-swap. */
#include "os.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "hooks.h"
#include "log.h"
#include "real.h"

#define SLOTS 4
#define NO_MAX 1000000

#define UNPACK(...) __VA_ARGS__
/* Declares `hook`'s slots and SLOTS wrappers that forward to it with their bound pointer. */
#define WRAPPERS(hook, ret, params, args)                                          \
  static void* hook##_slot[SLOTS];                                                 \
  static ret hook##_w0 params {                                                    \
    return hook(__atomic_load_n(&hook##_slot[0], __ATOMIC_ACQUIRE), UNPACK args);  \
  }                                                                                \
  static ret hook##_w1 params {                                                    \
    return hook(__atomic_load_n(&hook##_slot[1], __ATOMIC_ACQUIRE), UNPACK args);  \
  }                                                                                \
  static ret hook##_w2 params {                                                    \
    return hook(__atomic_load_n(&hook##_slot[2], __ATOMIC_ACQUIRE), UNPACK args);  \
  }                                                                                \
  static ret hook##_w3 params {                                                    \
    return hook(__atomic_load_n(&hook##_slot[3], __ATOMIC_ACQUIRE), UNPACK args);  \
  }                                                                                \
  static void* const hook##_wrappers[SLOTS] = {(void*)hook##_w0, (void*)hook##_w1, \
                                               (void*)hook##_w2, (void*)hook##_w3}

WRAPPERS(hook_init, CUresult, (unsigned int a), (a));
WRAPPERS(hook_get_proc_address_v1, CUresult, (const char* a, void** b, int c, unsigned long long d),
         (a, b, c, d));
WRAPPERS(hook_get_proc_address_v2, CUresult,
         (const char* a, void** b, int c, unsigned long long d, CUdriverProcAddressQueryResult* e),
         (a, b, c, d, e));
WRAPPERS(hook_mem_alloc, CUresult, (CUdeviceptr * a, size_t b), (a, b));
WRAPPERS(hook_mem_alloc_pitch, CUresult,
         (CUdeviceptr * a, size_t* b, size_t c, size_t d, unsigned int e), (a, b, c, d, e));
WRAPPERS(hook_mem_alloc_managed, CUresult, (CUdeviceptr * a, size_t b, unsigned int c), (a, b, c));
WRAPPERS(hook_mem_free, CUresult, (CUdeviceptr a), (a));
WRAPPERS(hook_mem_alloc_async, CUresult, (CUdeviceptr * a, size_t b, CUstream c), (a, b, c));
WRAPPERS(hook_mem_alloc_from_pool_async, CUresult,
         (CUdeviceptr * a, size_t b, CUmemoryPool c, CUstream d), (a, b, c, d));
WRAPPERS(hook_mem_free_async, CUresult, (CUdeviceptr a, CUstream b), (a, b));
WRAPPERS(hook_mem_pool_create, CUresult, (CUmemoryPool * a, const CUmemPoolProps* b), (a, b));
WRAPPERS(hook_mem_pool_destroy, CUresult, (CUmemoryPool a), (a));
WRAPPERS(hook_mem_pool_trim, CUresult, (CUmemoryPool a, size_t b), (a, b));
WRAPPERS(hook_device_pool, CUresult, (CUmemoryPool * a, CUdevice b), (a, b));
WRAPPERS(hook_mem_create, CUresult,
         (CUmemGenericAllocationHandle * a, size_t b, const CUmemAllocationProp* c,
          unsigned long long d),
         (a, b, c, d));
WRAPPERS(hook_mem_release, CUresult, (CUmemGenericAllocationHandle a), (a));
WRAPPERS(hook_mem_map, CUresult,
         (CUdeviceptr a, size_t b, size_t c, CUmemGenericAllocationHandle d, unsigned long long e),
         (a, b, c, d, e));
WRAPPERS(hook_mem_unmap, CUresult, (CUdeviceptr a, size_t b), (a, b));
WRAPPERS(hook_mem_retain, CUresult, (CUmemGenericAllocationHandle * a, void* b), (a, b));
WRAPPERS(hook_array_create, CUresult, (CUarray * a, const CUDA_ARRAY_DESCRIPTOR* b), (a, b));
WRAPPERS(hook_array3d_create, CUresult, (CUarray * a, const CUDA_ARRAY3D_DESCRIPTOR* b), (a, b));
WRAPPERS(hook_array_destroy, CUresult, (CUarray a), (a));
WRAPPERS(hook_mipmap_create, CUresult,
         (CUmipmappedArray * a, const CUDA_ARRAY3D_DESCRIPTOR* b, unsigned int c), (a, b, c));
WRAPPERS(hook_mipmap_destroy, CUresult, (CUmipmappedArray a), (a));
WRAPPERS(hook_ctx_create_v2, CUresult, (CUcontext * a, unsigned int b, CUdevice c), (a, b, c));
WRAPPERS(hook_ctx_create_v3, CUresult,
         (CUcontext * a, CUexecAffinityParam* b, int c, unsigned int d, CUdevice e),
         (a, b, c, d, e));
WRAPPERS(hook_ctx_create_v4, CUresult,
         (CUcontext * a, CUctxCreateParams* b, unsigned int c, CUdevice d), (a, b, c, d));
WRAPPERS(hook_ctx_destroy, CUresult, (CUcontext a), (a));
WRAPPERS(hook_ctx_set_limit, CUresult, (CUlimit a, size_t b), (a, b));
WRAPPERS(hook_primary_retain, CUresult, (CUcontext * a, CUdevice b), (a, b));
WRAPPERS(hook_primary_release, CUresult, (CUdevice a), (a));
WRAPPERS(hook_primary_reset, CUresult, (CUdevice a), (a));
WRAPPERS(hook_mem_get_info, CUresult, (size_t * a, size_t* b), (a, b));
WRAPPERS(hook_device_total_mem, CUresult, (size_t * a, CUdevice b), (a, b));
WRAPPERS(hook_nvml_memory_info, nvmlReturn_t, (nvmlDevice_t a, nvmlMemory_t* b), (a, b));
WRAPPERS(hook_nvml_memory_info_v2, nvmlReturn_t, (nvmlDevice_t a, nvmlMemory_v2_t* b), (a, b));
WRAPPERS(hook_nvml_processes_v1, nvmlReturn_t,
         (nvmlDevice_t a, unsigned int* b, nvmlProcessInfo_v1_t* c), (a, b, c));
WRAPPERS(hook_nvml_compute_processes, nvmlReturn_t,
         (nvmlDevice_t a, unsigned int* b, nvmlProcessInfo_t* c), (a, b, c));
WRAPPERS(hook_nvml_graphics_processes, nvmlReturn_t,
         (nvmlDevice_t a, unsigned int* b, nvmlProcessInfo_t* c), (a, b, c));
WRAPPERS(hook_nvml_mps_processes, nvmlReturn_t,
         (nvmlDevice_t a, unsigned int* b, nvmlProcessInfo_t* c), (a, b, c));
WRAPPERS(hook_nvml_process_utilization, nvmlReturn_t,
         (nvmlDevice_t a, nvmlProcessUtilizationSample_t* b, unsigned int* c, unsigned long long d),
         (a, b, c, d));
WRAPPERS(hook_launch_kernel, CUresult,
         (CUfunction a, unsigned int b, unsigned int c, unsigned int d, unsigned int e,
          unsigned int f, unsigned int g, unsigned int h, CUstream i, void** j, void** k),
         (a, b, c, d, e, f, g, h, i, j, k));
WRAPPERS(hook_launch_kernel_ex, CUresult,
         (const CUlaunchConfig* a, CUfunction b, void** c, void** d), (a, b, c, d));
WRAPPERS(hook_launch_cooperative, CUresult,
         (CUfunction a, unsigned int b, unsigned int c, unsigned int d, unsigned int e,
          unsigned int f, unsigned int g, unsigned int h, CUstream i, void** j),
         (a, b, c, d, e, f, g, h, i, j));
WRAPPERS(hook_launch_cooperative_multi, CUresult,
         (CUDA_LAUNCH_PARAMS * a, unsigned int b, unsigned int c), (a, b, c));
WRAPPERS(hook_launch, CUresult, (CUfunction a), (a));
WRAPPERS(hook_launch_grid, CUresult, (CUfunction a, int b, int c), (a, b, c));
WRAPPERS(hook_launch_grid_async, CUresult, (CUfunction a, int b, int c, CUstream d), (a, b, c, d));
WRAPPERS(hook_graph_launch, CUresult, (CUgraphExec a, CUstream b), (a, b));
WRAPPERS(hook_graph_instantiate, CUresult, (CUgraphExec * a, CUgraph b, unsigned long long c),
         (a, b, c));
WRAPPERS(hook_graph_exec_destroy, CUresult, (CUgraphExec a), (a));
WRAPPERS(hook_graph_mem_trim, CUresult, (CUdevice a), (a));
WRAPPERS(hook_begin_capture_v1, CUresult, (CUstream a), (a));
WRAPPERS(hook_begin_capture, CUresult, (CUstream a, CUstreamCaptureMode b), (a, b));
WRAPPERS(hook_begin_capture_to_graph, CUresult,
         (CUstream a, CUgraph b, const CUgraphNode* c, const CUgraphEdgeData* d, size_t e,
          CUstreamCaptureMode f),
         (a, b, c, d, e, f));
WRAPPERS(hook_end_capture, CUresult, (CUstream a, CUgraph* b), (a, b));

/* One ABI of one entry point. `proc_name` is the name cuGetProcAddress is asked for (valid from
 * min_version up to, not including, max_version); `symbols` the exported names with this ABI. */
struct family {
  const char* proc_name;
  int min_version;
  int max_version;
  const char* symbols[3];
  void** slots;
  void* const* wrappers;
};

#define FAMILY(hook, proc, min, max, ...) \
  { proc, min, max, {__VA_ARGS__}, hook##_slot, hook##_wrappers }

static const struct family kFamilies[] = {
    FAMILY(hook_init, "cuInit", 0, NO_MAX, "cuInit"),
    FAMILY(hook_get_proc_address_v1, "cuGetProcAddress", 11030, 12000, "cuGetProcAddress"),
    FAMILY(hook_get_proc_address_v2, "cuGetProcAddress", 12000, NO_MAX, "cuGetProcAddress_v2"),
    FAMILY(hook_mem_alloc, "cuMemAlloc", 3020, NO_MAX, "cuMemAlloc_v2"),
    FAMILY(hook_mem_alloc_pitch, "cuMemAllocPitch", 3020, NO_MAX, "cuMemAllocPitch_v2"),
    FAMILY(hook_mem_alloc_managed, "cuMemAllocManaged", 0, NO_MAX, "cuMemAllocManaged"),
    FAMILY(hook_mem_free, "cuMemFree", 3020, NO_MAX, "cuMemFree_v2"),
    FAMILY(hook_mem_alloc_async, "cuMemAllocAsync", 0, NO_MAX, "cuMemAllocAsync",
           "cuMemAllocAsync_ptsz"),
    FAMILY(hook_mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync", 0, NO_MAX,
           "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz"),
    FAMILY(hook_mem_free_async, "cuMemFreeAsync", 0, NO_MAX, "cuMemFreeAsync",
           "cuMemFreeAsync_ptsz"),
    FAMILY(hook_mem_pool_create, "cuMemPoolCreate", 0, NO_MAX, "cuMemPoolCreate"),
    FAMILY(hook_mem_pool_destroy, "cuMemPoolDestroy", 0, NO_MAX, "cuMemPoolDestroy"),
    FAMILY(hook_mem_pool_trim, "cuMemPoolTrimTo", 0, NO_MAX, "cuMemPoolTrimTo"),
    FAMILY(hook_device_pool, "cuDeviceGetMemPool", 0, NO_MAX, "cuDeviceGetMemPool"),
    FAMILY(hook_device_pool, "cuDeviceGetDefaultMemPool", 0, NO_MAX, "cuDeviceGetDefaultMemPool"),
    FAMILY(hook_mem_create, "cuMemCreate", 0, NO_MAX, "cuMemCreate"),
    FAMILY(hook_mem_release, "cuMemRelease", 0, NO_MAX, "cuMemRelease"),
    FAMILY(hook_mem_map, "cuMemMap", 0, NO_MAX, "cuMemMap"),
    FAMILY(hook_mem_unmap, "cuMemUnmap", 0, NO_MAX, "cuMemUnmap"),
    FAMILY(hook_mem_retain, "cuMemRetainAllocationHandle", 0, NO_MAX,
           "cuMemRetainAllocationHandle"),
    FAMILY(hook_array_create, "cuArrayCreate", 3020, NO_MAX, "cuArrayCreate_v2"),
    FAMILY(hook_array3d_create, "cuArray3DCreate", 3020, NO_MAX, "cuArray3DCreate_v2"),
    FAMILY(hook_array_destroy, "cuArrayDestroy", 0, NO_MAX, "cuArrayDestroy"),
    FAMILY(hook_mipmap_create, "cuMipmappedArrayCreate", 0, NO_MAX, "cuMipmappedArrayCreate"),
    FAMILY(hook_mipmap_destroy, "cuMipmappedArrayDestroy", 0, NO_MAX, "cuMipmappedArrayDestroy"),
    FAMILY(hook_ctx_create_v2, "cuCtxCreate", 3020, 11040, "cuCtxCreate_v2"),
    FAMILY(hook_ctx_create_v3, "cuCtxCreate", 11040, 12050, "cuCtxCreate_v3"),
    FAMILY(hook_ctx_create_v4, "cuCtxCreate", 12050, NO_MAX, "cuCtxCreate_v4"),
    FAMILY(hook_ctx_destroy, "cuCtxDestroy", 4000, NO_MAX, "cuCtxDestroy_v2"),
    FAMILY(hook_ctx_set_limit, "cuCtxSetLimit", 0, NO_MAX, "cuCtxSetLimit"),
    FAMILY(hook_primary_retain, "cuDevicePrimaryCtxRetain", 0, NO_MAX, "cuDevicePrimaryCtxRetain"),
    FAMILY(hook_primary_release, "cuDevicePrimaryCtxRelease", 0, NO_MAX,
           "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2"),
    FAMILY(hook_primary_reset, "cuDevicePrimaryCtxReset", 0, NO_MAX, "cuDevicePrimaryCtxReset",
           "cuDevicePrimaryCtxReset_v2"),
    FAMILY(hook_mem_get_info, "cuMemGetInfo", 3020, NO_MAX, "cuMemGetInfo_v2"),
    FAMILY(hook_device_total_mem, "cuDeviceTotalMem", 3020, NO_MAX, "cuDeviceTotalMem_v2"),
    FAMILY(hook_launch_kernel, "cuLaunchKernel", 0, NO_MAX, "cuLaunchKernel",
           "cuLaunchKernel_ptsz"),
    FAMILY(hook_launch_kernel_ex, "cuLaunchKernelEx", 0, NO_MAX, "cuLaunchKernelEx",
           "cuLaunchKernelEx_ptsz"),
    FAMILY(hook_launch_cooperative, "cuLaunchCooperativeKernel", 0, NO_MAX,
           "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz"),
    FAMILY(hook_launch_cooperative_multi, "cuLaunchCooperativeKernelMultiDevice", 0, NO_MAX,
           "cuLaunchCooperativeKernelMultiDevice"),
    FAMILY(hook_launch, "cuLaunch", 0, NO_MAX, "cuLaunch"),
    FAMILY(hook_launch_grid, "cuLaunchGrid", 0, NO_MAX, "cuLaunchGrid"),
    FAMILY(hook_launch_grid_async, "cuLaunchGridAsync", 0, NO_MAX, "cuLaunchGridAsync"),
    FAMILY(hook_graph_launch, "cuGraphLaunch", 0, NO_MAX, "cuGraphLaunch", "cuGraphLaunch_ptsz"),
    FAMILY(hook_graph_instantiate, "cuGraphInstantiateWithFlags", 0, NO_MAX,
           "cuGraphInstantiateWithFlags"),
    FAMILY(hook_graph_instantiate, "cuGraphInstantiate", 12000, NO_MAX,
           "cuGraphInstantiateWithFlags"),
    FAMILY(hook_graph_exec_destroy, "cuGraphExecDestroy", 0, NO_MAX, "cuGraphExecDestroy"),
    FAMILY(hook_graph_mem_trim, "cuDeviceGraphMemTrim", 0, NO_MAX, "cuDeviceGraphMemTrim"),
    FAMILY(hook_begin_capture_v1, "cuStreamBeginCapture", 10000, 10010, "cuStreamBeginCapture"),
    FAMILY(hook_begin_capture, "cuStreamBeginCapture", 10010, NO_MAX, "cuStreamBeginCapture_v2",
           "cuStreamBeginCapture_v2_ptsz"),
    FAMILY(hook_begin_capture_to_graph, "cuStreamBeginCaptureToGraph", 12030, NO_MAX,
           "cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph_ptsz"),
    FAMILY(hook_end_capture, "cuStreamEndCapture", 0, NO_MAX, "cuStreamEndCapture",
           "cuStreamEndCapture_ptsz"),
    FAMILY(hook_nvml_memory_info, NULL, 0, 0, "nvmlDeviceGetMemoryInfo"),
    FAMILY(hook_nvml_memory_info_v2, NULL, 0, 0, "nvmlDeviceGetMemoryInfo_v2"),
    FAMILY(hook_nvml_processes_v1, NULL, 0, 0, "nvmlDeviceGetComputeRunningProcesses",
           "nvmlDeviceGetGraphicsRunningProcesses", "nvmlDeviceGetMPSComputeRunningProcesses"),
    FAMILY(hook_nvml_compute_processes, NULL, 0, 0, "nvmlDeviceGetComputeRunningProcesses_v2",
           "nvmlDeviceGetComputeRunningProcesses_v3"),
    FAMILY(hook_nvml_graphics_processes, NULL, 0, 0, "nvmlDeviceGetGraphicsRunningProcesses_v2",
           "nvmlDeviceGetGraphicsRunningProcesses_v3"),
    FAMILY(hook_nvml_mps_processes, NULL, 0, 0, "nvmlDeviceGetMPSComputeRunningProcesses_v2",
           "nvmlDeviceGetMPSComputeRunningProcesses_v3"),
    FAMILY(hook_nvml_process_utilization, NULL, 0, 0, "nvmlDeviceGetProcessUtilization"),
};
#define FAMILY_COUNT (sizeof(kFamilies) / sizeof(kFamilies[0]))

static void* bind_wrapper(const struct family* f, void* real) {
  for (int i = 0; i < SLOTS; ++i) {
    void* bound = __atomic_load_n(&f->slots[i], __ATOMIC_ACQUIRE);
    if (bound == NULL) {
      void* expected = NULL;
      if (__atomic_compare_exchange_n(&f->slots[i], &expected, real, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
        return f->wrappers[i];
      }
      bound = expected;
    }
    if (bound == real) return f->wrappers[i];
  }
  HOOK_LOG(HOOK_LOG_ERROR, "no free wrapper for a further variant of %s",
           f->symbols[0] ? f->symbols[0] : "?");
  return NULL;
}

/* Whether `address` lies in this library (dlsym(RTLD_DEFAULT) finds our own exports). */
static int is_own(void* address) {
  static void* own_base;
  Dl_info info;
  if (own_base == NULL && dladdr((void*)&bind_wrapper, &info) != 0) own_base = info.dli_fbase;
  return dladdr(address, &info) != 0 && info.dli_fbase == own_base;
}

void* hook_wrap(const char* symbol, int version, void* real) {
  if (symbol == NULL || real == NULL) return real;
  if (!(symbol[0] == 'c' && symbol[1] == 'u') && strncmp(symbol, "nvml", 4) != 0) return real;
  for (size_t i = 0; i < FAMILY_COUNT; ++i) {
    const struct family* f = &kFamilies[i];
    if (version >= 0) {
      if (f->proc_name == NULL || strcmp(f->proc_name, symbol) != 0) continue;
      if (version < f->min_version || version >= f->max_version) continue;
      /* A driver whose table points at its exported symbols hands out ours (interposed): they
       * already run the hook, and a wrapper around them would only see a nested call. */
      return is_own(real) ? real : bind_wrapper(f, real);
    }
    for (int s = 0; s < 3 && f->symbols[s]; ++s) {
      if (strcmp(f->symbols[s], symbol) == 0) return is_own(real) ? real : bind_wrapper(f, real);
    }
  }
  return real;
}

CUresult hook_get_proc_address_v2(void* real, const char* symbol, void** pfn, int version,
                                  unsigned long long flags,
                                  CUdriverProcAddressQueryResult* status) {
  __typeof__(&cuGetProcAddress_v2) fn = (__typeof__(&cuGetProcAddress_v2))real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = fn(symbol, pfn, version, flags, status);
  if (rc != CUDA_SUCCESS || pfn == NULL || *pfn == NULL) return rc;
  void* wrapped = hook_wrap(symbol, version, *pfn);
  if (wrapped == NULL) {
    *pfn = NULL;
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = wrapped;
  return rc;
}

CUresult hook_get_proc_address_v1(void* real, const char* symbol, void** pfn, int version,
                                  unsigned long long flags) {
  typedef CUresult (*v1_fn)(const char*, void**, int, unsigned long long);
  v1_fn fn = (v1_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  CUresult rc = fn(symbol, pfn, version, flags);
  if (rc != CUDA_SUCCESS || pfn == NULL || *pfn == NULL) return rc;
  void* wrapped = hook_wrap(symbol, version, *pfn);
  if (wrapped == NULL) {
    *pfn = NULL;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = wrapped;
  return rc;
}

HOOK_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                         unsigned long long flags,
                                         CUdriverProcAddressQueryResult* status) {
  return hook_get_proc_address_v2(real_fn(REAL_cuGetProcAddress_v2), symbol, pfn, version, flags,
                                  status);
}

#undef cuGetProcAddress
HOOK_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version,
                                      unsigned long long flags) {
  return hook_get_proc_address_v1(real_fn(REAL_cuGetProcAddress), symbol, pfn, version, flags);
}

/* dlsym(RTLD_NEXT, name) as the caller means it: the first object after the caller's in the
 * global search order that defines `name` (glibc's own RTLD_NEXT would search after this
 * library instead). */
static void* next_after(void* caller, const char* name) {
  Dl_info info;
  struct link_map* map = NULL;
  if (dladdr1(caller, &info, (void**)&map, RTLD_DL_LINKMAP) == 0 || map == NULL) {
    return real_dlsym(RTLD_NEXT, name);
  }
  for (struct link_map* l = map->l_next; l != NULL; l = l->l_next) {
    void* handle = dlopen(l->l_name[0] ? l->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL) continue;
    void* symbol = real_dlsym(handle, name);
    dlclose(handle);
    if (symbol == NULL) continue;
    struct link_map* owner = NULL;
    if (dladdr1(symbol, &info, (void**)&owner, RTLD_DL_LINKMAP) != 0 && owner == l) return symbol;
  }
  return NULL;
}

HOOK_EXPORT void* dlsym(void* handle, const char* name) {
  void* symbol = handle == RTLD_NEXT ? next_after(__builtin_return_address(0), name)
                                     : real_dlsym(handle, name);
  if (symbol == NULL) return symbol;
  void* wrapped = hook_wrap(name, -1, symbol);
  return wrapped;
}
