/* cuGetProcAddress / cuGetProcAddress_v2 semantics, used the way the CUDA runtime does: dlopen
 * libcuda.so.1, dlsym cuGetProcAddress_v2, then ask for base names with a CUDA version and flags.
 */
#include <dlfcn.h>
#include <limits.h>

#include "test_support.h"

typedef CUresult (*GetProcV2)(const char*, void**, int, unsigned long long,
                              CUdriverProcAddressQueryResult*);
typedef CUresult (*GetProcV1)(const char*, void**, int, unsigned long long);

static void* g_lib;
static GetProcV2 g_get;

/* Looks `name` up at `version` with `flags`; expects the exported symbol `want` (NULL: expects
 * CUDA_ERROR_NOT_FOUND with `want_status`). */
static void Expect(const char* name, int version, unsigned long long flags, const char* want,
                   CUdriverProcAddressQueryResult want_status) {
  void* fn = (void*)1;
  CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
  CUresult r = g_get(name, &fn, version, flags, &status);
  if (want != NULL) {
    void* expected = dlsym(g_lib, want);
    if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || expected == NULL ||
        fn != expected) {
      fprintf(stderr, "%s@%d flags %llu: got r=%d status=%d fn=%p, want %s (%p)\n", name, version,
              flags, (int)r, (int)status, fn, want, expected);
      ++g_failures;
    }
  } else if (r != CUDA_ERROR_NOT_FOUND || status != want_status || fn != NULL) {
    fprintf(stderr, "%s@%d flags %llu: got r=%d status=%d fn=%p, want not found (status %d)\n",
            name, version, flags, (int)r, (int)status, fn, (int)want_status);
    ++g_failures;
  }
}

#define OK CU_GET_PROC_ADDRESS_SUCCESS
#define PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define LEGACY CU_GET_PROC_ADDRESS_LEGACY_STREAM

int main(void) {
  UsePrivateState("count=1,memory=2GiB");
  g_lib = dlopen(SIMGPU_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
  if (g_lib == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", SIMGPU_LIBCUDA, dlerror());
    return 1;
  }
  g_get = (GetProcV2)dlsym(g_lib, "cuGetProcAddress_v2");
  EXPECT_TRUE(g_get != NULL);
  if (g_get == NULL) return 1;

  /* Version selects the ABI. */
  Expect("cuInit", 2000, 0, "cuInit", OK);
  Expect("cuMemAlloc", 3020, 0, "cuMemAlloc_v2", OK);
  Expect("cuMemAlloc", 13000, 0, "cuMemAlloc_v2", OK);
  Expect("cuMemAlloc", 2000, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  Expect("cuDeviceTotalMem", 3020, 0, "cuDeviceTotalMem_v2", OK);
  Expect("cuDeviceTotalMem", 2000, 0, "cuDeviceTotalMem", OK);
  Expect("cuMemGetInfo", 2000, 0, "cuMemGetInfo", OK);
  Expect("cuMemGetInfo", 12000, 0, "cuMemGetInfo_v2", OK);
  Expect("cuMemHostRegister", 4000, 0, "cuMemHostRegister", OK);
  Expect("cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2", OK);
  Expect("cuMemHostRegister", 3020, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  Expect("cuMemHostUnregister", 4000, 0, "cuMemHostUnregister", OK);
  Expect("cuMemHostGetDevicePointer", 3020, 0, "cuMemHostGetDevicePointer_v2", OK);
  Expect("cuMemHostGetFlags", 2030, 0, "cuMemHostGetFlags", OK);
  Expect("cuCtxCreate", 3020, 0, "cuCtxCreate_v2", OK);
  Expect("cuCtxCreate", 12050, 0, "cuCtxCreate_v4", OK);
  Expect("cuCtxDestroy", 4000, 0, "cuCtxDestroy_v2", OK);
  Expect("cuCtxGetDevice", 12000, 0, "cuCtxGetDevice", OK);
  Expect("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2", OK);
  Expect("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2", OK);
  Expect("cuDevicePrimaryCtxRelease", 7000, 0, "cuDevicePrimaryCtxRelease", OK);
  Expect("cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2", OK);
  Expect("cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture", OK);
  Expect("cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2", OK);
  Expect("cuStreamBeginCaptureToGraph", 12030, 0, "cuStreamBeginCaptureToGraph", OK);
  Expect("cuStreamBeginCaptureToGraph", 12020, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  Expect("cuGraphAddKernelNode", 10000, 0, "cuGraphAddKernelNode", OK);
  Expect("cuGraphAddKernelNode", 12000, 0, "cuGraphAddKernelNode_v2", OK);
  Expect("cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2", OK);
  Expect("cuGetProcAddress", 11030, 0, "cuGetProcAddress", OK);
  Expect("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", OK);
  Expect("cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx", OK);
  Expect("cuLaunchKernelEx", 11000, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  Expect("cuMemAllocAsync", 11010, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

  /* The per-thread default stream flag picks the _ptsz/_ptds variant where there is one. */
  Expect("cuLaunchKernel", 12000, PTDS, "cuLaunchKernel_ptsz", OK);
  Expect("cuLaunchKernel", 12000, LEGACY, "cuLaunchKernel", OK);
  Expect("cuLaunchKernel", 12000, 0, "cuLaunchKernel", OK);
  Expect("cuLaunchKernelEx", 12000, PTDS, "cuLaunchKernelEx_ptsz", OK);
  Expect("cuLaunchCooperativeKernel", 12000, PTDS, "cuLaunchCooperativeKernel_ptsz", OK);
  Expect("cuGraphLaunch", 12000, PTDS, "cuGraphLaunch_ptsz", OK);
  Expect("cuMemAllocAsync", 12000, PTDS, "cuMemAllocAsync_ptsz", OK);
  Expect("cuMemAllocFromPoolAsync", 12000, PTDS, "cuMemAllocFromPoolAsync_ptsz", OK);
  Expect("cuMemFreeAsync", 12000, PTDS, "cuMemFreeAsync_ptsz", OK);
  Expect("cuStreamSynchronize", 12000, PTDS, "cuStreamSynchronize_ptsz", OK);
  Expect("cuEventRecord", 12000, PTDS, "cuEventRecord_ptsz", OK);
  Expect("cuMemcpyHtoD", 12000, PTDS, "cuMemcpyHtoD_v2_ptds", OK);
  Expect("cuMemcpy", 12000, PTDS, "cuMemcpy_ptds", OK);
  Expect("cuMemsetD32", 12000, PTDS, "cuMemsetD32_v2_ptds", OK);
  Expect("cuStreamBeginCapture", 12000, PTDS, "cuStreamBeginCapture_v2_ptsz", OK);
  Expect("cuStreamBeginCaptureToGraph", 12030, PTDS, "cuStreamBeginCaptureToGraph_ptsz", OK);
  Expect("cuMemAlloc", 12000, PTDS, "cuMemAlloc_v2", OK); /* no variant: the plain one */
  Expect("cuStreamSynchronize", 7000, PTDS, "cuStreamSynchronize_ptsz", OK);
  /* The variants came with CUDA 7.0: a name that has one, asked for with the flag at an older
   * version, is not resolved (observed on a real driver 580 for cuStreamSynchronize at 2000),
   * while names without a variant resolve at such versions with the flag (cuStreamCreate and
   * cuArrayDestroy at 2000 on the same driver). */
  Expect("cuStreamSynchronize", 2000, PTDS, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  Expect("cuLaunchKernel", 6050, PTDS, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  Expect("cuStreamSynchronize", 2000, LEGACY, "cuStreamSynchronize", OK);
  Expect("cuStreamCreate", 2000, PTDS, "cuStreamCreate", OK);
  Expect("cuArrayDestroy", 2000, PTDS, "cuArrayDestroy", OK);

  /* Base names only; unknown names; bad flags. */
  Expect("cuMemAlloc_v2", 12000, 0, NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  Expect("cuNoSuchCall", 12000, 0, NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  void* fn = NULL;
  EXPECT_TRUE(g_get("cuInit", &fn, 12000, 1ull << 7, NULL) == CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(g_get(NULL, &fn, 12000, 0, NULL) == CUDA_ERROR_INVALID_VALUE);

  /* The first-ABI cuGetProcAddress has no status argument. */
  GetProcV1 get1 = (GetProcV1)dlsym(g_lib, "cuGetProcAddress");
  EXPECT_TRUE(get1 != NULL && get1("cuMemAlloc", &fn, 12000, 0) == CUDA_SUCCESS &&
              fn == dlsym(g_lib, "cuMemAlloc_v2"));

  /* Calling through what came back works, with each ABI's own types. */
  CUresult (*init)(unsigned) = NULL;
  CUresult (*total_v1)(unsigned*, CUdevice) = NULL;
  CUresult (*total_v2)(size_t*, CUdevice) = NULL;
  CHECK_OK(g_get("cuInit", (void**)&init, 13000, 0, NULL));
  CHECK_OK(g_get("cuDeviceTotalMem", (void**)&total_v1, 2000, 0, NULL));
  CHECK_OK(g_get("cuDeviceTotalMem", (void**)&total_v2, 13000, 0, NULL));
  CHECK_OK(init(0));
  unsigned small = 0;
  size_t big = 0;
  CHECK_OK(total_v1(&small, 0));
  CHECK_OK(total_v2(&big, 0));
  EXPECT_TRUE(big == 2ull << 30 && small == 2u << 30);

  dlclose(g_lib);
  return Finish("proc_address_test");
}
