/* Exercises every simulated driver path through the public ABI (src/abi/cuda_driver.h), linked to
 * simgpu's libcuda.so.1 like any CUDA program. Two 4 GiB devices, 64 MiB per context. */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <time.h>

#include "test_support.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

static size_t FreeBytes(void) {
  size_t free_bytes = 0, total = 0;
  CHECK_OK(cuMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

static double NowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void TestInitAndDevices(void) {
  int count = -1, version = 0;
  CUdevice dev;
  EXPECT_RESULT(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&count));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuInit(1));
  CHECK_OK(cuInit(0));
  CHECK_OK(cuDriverGetVersion(&version));
  EXPECT_TRUE(version >= 12000);
  CHECK_OK(cuDeviceGetCount(&count));
  EXPECT_TRUE(count == 2);
  CHECK_OK(cuDeviceGet(&dev, 1));
  EXPECT_TRUE(dev == 1);
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&dev, 2));

  char name[64], bus[32];
  CHECK_OK(cuDeviceGetName(name, sizeof(name), 0));
  EXPECT_TRUE(strcmp(name, "SimGPU-T") == 0);
  CHECK_OK(cuDeviceGetPCIBusId(bus, sizeof(bus), 1));
  CUdevice by_bus = -1;
  CHECK_OK(cuDeviceGetByPCIBusId(&by_bus, bus));
  EXPECT_TRUE(by_bus == 1);

  CUuuid u0, u1, u0b;
  CHECK_OK(cuDeviceGetUuid(&u0, 0));
  CHECK_OK(cuDeviceGetUuid_v2(&u0b, 0));
  CHECK_OK(cuDeviceGetUuid(&u1, 1));
  EXPECT_TRUE(memcmp(&u0, &u0b, sizeof(u0)) == 0);
  EXPECT_TRUE(memcmp(&u0, &u1, sizeof(u0)) != 0);

  int v = 0;
  CHECK_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  EXPECT_TRUE(v == 40);
  CHECK_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0));
  EXPECT_TRUE(v == 2048);
  int major = 0, minor = 0;
  CHECK_OK(cuDeviceComputeCapability(&major, &minor, 0));
  EXPECT_TRUE(major >= 7);

  size_t total = 0;
  CHECK_OK(cuDeviceTotalMem(&total, 0));
  EXPECT_TRUE(total == 4 * GiB);
  const char* s = NULL;
  CHECK_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
  EXPECT_TRUE(s != NULL && strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
  CHECK_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
  EXPECT_TRUE(s != NULL && strcmp(s, "out of memory") == 0);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGetErrorName((CUresult)12345, &s));
  const void* table = (const void*)1;
  CUuuid id = {{0}};
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuGetExportTable(&table, &id));
}

static void TestContexts(void) {
  CUcontext primary = NULL, again = NULL, ctx = NULL, cur = NULL, popped = NULL;
  size_t before = 0, total = 0;
  unsigned flags = 0;
  int active = -1;
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuMemGetInfo(&before, &total));
  CHECK_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  EXPECT_TRUE(active == 0);
  CHECK_OK(cuDevicePrimaryCtxRetain(&primary, 0));
  CHECK_OK(cuDevicePrimaryCtxRetain(&again, 0));
  EXPECT_TRUE(primary == again);
  CHECK_OK(cuCtxSetCurrent(primary));
  CHECK_OK(cuCtxGetCurrent(&cur));
  EXPECT_TRUE(cur == primary);
  /* A context costs ctxmem (64 MiB). */
  EXPECT_TRUE(FreeBytes() == 4 * GiB - 64 * MiB);
  CHECK_OK(cuCtxCreate(&ctx, 0, 0));
  EXPECT_TRUE(FreeBytes() == 4 * GiB - 128 * MiB);
  CUdevice d = -1;
  CHECK_OK(cuCtxGetDevice(&d));
  EXPECT_TRUE(d == 0);
  CHECK_OK(cuCtxPopCurrent(&popped));
  EXPECT_TRUE(popped == ctx);
  CHECK_OK(cuCtxGetCurrent(&cur));
  EXPECT_TRUE(cur == primary);
  CHECK_OK(cuCtxPushCurrent(ctx));
  CHECK_OK(cuCtxSynchronize());
  CHECK_OK(cuCtxDestroy(ctx));
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(ctx));
  CHECK_OK(cuCtxSetCurrent(primary));
  EXPECT_TRUE(FreeBytes() == 4 * GiB - 64 * MiB);
  CHECK_OK(cuDevicePrimaryCtxRelease(0)); /* one reference left */
  CHECK_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  EXPECT_TRUE(active == 1);
}

static void TestAllocations(void) {
  CUdeviceptr a = 0, b = 0, m = 0, p = 0, base = 0;
  size_t start = FreeBytes(), pitch = 0, size = 0;
  CHECK_OK(cuMemAlloc(&a, 1));
  EXPECT_TRUE(start - FreeBytes() == 2 * MiB); /* 2 MiB granularity */
  CHECK_OK(cuMemAlloc(&b, 2 * MiB + 1));
  EXPECT_TRUE(start - FreeBytes() == 6 * MiB);
  EXPECT_TRUE(a != b && a % (2 * MiB) == 0);
  CHECK_OK(cuMemGetAddressRange(&base, &size, b + 100));
  EXPECT_TRUE(base == b && size == 2 * MiB + 1);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(&p, 0));
  EXPECT_RESULT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&p, 5 * GiB));
  CHECK_OK(cuMemAllocPitch(&p, &pitch, 1000, 100, 4));
  EXPECT_TRUE(pitch >= 1000);
  CHECK_OK(cuMemAllocManaged(&m, 3 * MiB, CU_MEM_ATTACH_GLOBAL));
  EXPECT_TRUE(start - FreeBytes() == 12 * MiB);
  ((volatile char*)(uintptr_t)m)[0] = 1; /* managed memory is host-accessible */
  CHECK_OK(cuMemFree(a));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemFree(a));
  CHECK_OK(cuMemFree(b));
  CHECK_OK(cuMemFree(p));
  CHECK_OK(cuMemFree(m));
  EXPECT_TRUE(FreeBytes() == start);

  /* The exact remainder fits; one more granule does not. */
  size_t free_now = FreeBytes();
  CUdeviceptr all = 0;
  CHECK_OK(cuMemAlloc(&all, free_now));
  EXPECT_TRUE(FreeBytes() == 0);
  EXPECT_RESULT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&p, 1));
  CHECK_OK(cuMemFree(all));

  /* Async allocations, default and explicit pools. */
  CUstream s = NULL;
  CUmemoryPool pool = NULL, def = NULL;
  CUmemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CHECK_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK_OK(cuDeviceGetDefaultMemPool(&def, 0));
  CHECK_OK(cuMemPoolCreate(&pool, &props));
  CHECK_OK(cuMemAllocAsync(&a, 10 * MiB, s));
  CHECK_OK(cuMemAllocAsync_ptsz(&b, 1 * MiB, NULL));
  CHECK_OK(cuMemAllocFromPoolAsync(&p, 4 * MiB, pool, s));
  CHECK_OK(cuMemAllocFromPoolAsync_ptsz(&m, 4 * MiB, def, s));
  EXPECT_TRUE(start - FreeBytes() == 20 * MiB);
  CHECK_OK(cuMemFreeAsync(a, s));
  CHECK_OK(cuMemFreeAsync_ptsz(b, NULL));
  CHECK_OK(cuMemFreeAsync(p, s));
  CHECK_OK(cuMemFreeAsync(m, s));
  /* The pools keep what they reserved until a synchronisation (release threshold 0) or a trim. */
  EXPECT_TRUE(start - FreeBytes() == 20 * MiB);
  uint64_t reserved = 0, used = 1;
  CHECK_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
  CHECK_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
  EXPECT_TRUE(reserved == 4 * MiB && used == 0);
  CHECK_OK(cuMemPoolTrimTo(pool, 0));
  EXPECT_TRUE(start - FreeBytes() == 16 * MiB);
  CHECK_OK(cuMemPoolDestroy(pool));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(def));
  CHECK_OK(cuStreamSynchronize(s));
  EXPECT_TRUE(FreeBytes() == start);

  /* Small allocations share the pool's 2 MiB chunks. */
  CUdeviceptr small[64];
  for (int i = 0; i < 64; ++i) CHECK_OK(cuMemAllocAsync(&small[i], 1024, s));
  EXPECT_TRUE(start - FreeBytes() == 2 * MiB);
  CHECK_OK(cuMemGetAddressRange(&p, &size, small[1]));
  EXPECT_TRUE(p == small[1] && size == 1024);
  for (int i = 0; i < 64; ++i) CHECK_OK(cuMemFreeAsync(small[i], s));
  /* Above the release threshold only. */
  uint64_t threshold = 8 * MiB;
  CHECK_OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  CHECK_OK(cuMemAllocAsync(&a, 6 * MiB, s));
  CHECK_OK(cuMemAllocAsync(&b, 6 * MiB, s));
  CHECK_OK(cuMemFreeAsync(a, s));
  CHECK_OK(cuMemFreeAsync(b, s));
  CHECK_OK(cuStreamSynchronize(s));
  CHECK_OK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
  EXPECT_TRUE(reserved <= 8 * MiB && reserved > 0);
  EXPECT_TRUE(start - FreeBytes() == reserved);
  CHECK_OK(cuMemAllocAsync(&a, 6 * MiB, s)); /* from what the pool kept */
  EXPECT_TRUE(start - FreeBytes() == reserved);
  CHECK_OK(cuMemFreeAsync(a, s));
  threshold = 0;
  CHECK_OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  CHECK_OK(cuCtxSynchronize());
  EXPECT_TRUE(FreeBytes() == start);

  /* A host pool charges no device memory. */
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  props.location.id = 0;
  CHECK_OK(cuMemPoolCreate(&pool, &props));
  CHECK_OK(cuMemAllocFromPoolAsync(&p, 64 * MiB, pool, s));
  EXPECT_TRUE(FreeBytes() == start);
  CHECK_OK(cuMemFreeAsync(p, s));
  CHECK_OK(cuMemPoolDestroy(pool));
  CHECK_OK(cuStreamDestroy(s));

  /* A device heap beyond the default 8 MiB is device memory of the context. */
  size_t heap = 0;
  CHECK_OK(cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE));
  EXPECT_TRUE(heap == 8 * MiB);
  CHECK_OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 * MiB));
  EXPECT_TRUE(start - FreeBytes() == 56 * MiB);
  EXPECT_RESULT(CUDA_ERROR_OUT_OF_MEMORY, cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 * GiB));
  CHECK_OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8 * MiB));
  EXPECT_TRUE(FreeBytes() == start);

  /* Graph memory nodes: backed at launch, kept for graphs after the free, until trimmed. */
  {
    CUgraph graph = NULL;
    CUgraphNode node = NULL;
    CUgraphExec exec = NULL;
    CUstream gs = NULL;
    CUDA_MEM_ALLOC_NODE_PARAMS alloc;
    memset(&alloc, 0, sizeof(alloc));
    alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    alloc.bytesize = 16 * MiB;
    CHECK_OK(cuStreamCreate(&gs, CU_STREAM_NON_BLOCKING));
    CHECK_OK(cuGraphCreate(&graph, 0));
    CHECK_OK(cuGraphAddMemAllocNode(&node, graph, NULL, 0, &alloc));
    EXPECT_TRUE(alloc.dptr != 0);
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL;
    CHECK_OK(cuGraphNodeGetType(node, &type));
    EXPECT_TRUE(type == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    CHECK_OK(cuGraphInstantiate(&exec, graph, 0));
    EXPECT_TRUE(FreeBytes() == start);
    CHECK_OK(cuGraphLaunch(exec, gs));
    EXPECT_TRUE(start - FreeBytes() == 16 * MiB);
    EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(exec, gs)); /* still allocated */
    CHECK_OK(cuMemFree(alloc.dptr));
    EXPECT_TRUE(start - FreeBytes() == 16 * MiB); /* kept for graphs */
    CHECK_OK(cuGraphLaunch(exec, gs));
    EXPECT_TRUE(start - FreeBytes() == 16 * MiB); /* reused */
    CHECK_OK(cuMemFree(alloc.dptr));
    CHECK_OK(cuDeviceGraphMemTrim(0));
    EXPECT_TRUE(FreeBytes() == start);
    CHECK_OK(cuGraphExecDestroy(exec));
    CHECK_OK(cuGraphDestroy(graph));
    /* Captured: an allocation and its free become nodes; the launch backs and frees it. */
    CUdeviceptr q = 0;
    uint64_t reserved = 0;
    CHECK_OK(cuStreamBeginCapture(gs, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_OK(cuMemAllocAsync(&q, 8 * MiB, gs));
    CHECK_OK(cuMemFreeAsync(q, gs));
    CHECK_OK(cuStreamEndCapture(gs, &graph));
    EXPECT_TRUE(FreeBytes() == start);
    CHECK_OK(cuGraphInstantiate(&exec, graph, 0));
    CHECK_OK(cuGraphLaunch(exec, gs));
    CHECK_OK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved));
    EXPECT_TRUE(reserved == 8 * MiB && start - FreeBytes() == 8 * MiB);
    CHECK_OK(cuDeviceGraphMemTrim(0));
    EXPECT_TRUE(FreeBytes() == start);
    CHECK_OK(cuGraphExecDestroy(exec));
    CHECK_OK(cuGraphDestroy(graph));
    CHECK_OK(cuStreamDestroy(gs));
  }

  /* Host memory costs no device memory. */
  void* host = NULL;
  CHECK_OK(cuMemAllocHost(&host, 1 << 20));
  CHECK_OK(cuMemFreeHost(host));
  EXPECT_TRUE(FreeBytes() == start);
}

static void TestVirtualMemory(void) {
  size_t start = FreeBytes(), gran = 0;
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CHECK_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  EXPECT_TRUE(gran == 2 * MiB);
  CUmemGenericAllocationHandle h = 0, host_h = 0;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, 3 * MiB, &prop, 0));
  CHECK_OK(cuMemCreate(&h, 8 * MiB, &prop, 0));
  EXPECT_TRUE(start - FreeBytes() == 8 * MiB);
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CHECK_OK(cuMemCreate(&host_h, 8 * MiB, &prop, 0));
  EXPECT_TRUE(start - FreeBytes() == 8 * MiB); /* host location: not device memory */
  CHECK_OK(cuMemRelease(host_h));

  CUdeviceptr va = 0;
  CHECK_OK(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0));
  CHECK_OK(cuMemMap(va, 8 * MiB, 0, h, 0));
  EXPECT_RESULT(CUDA_ERROR_ALREADY_MAPPED, cuMemMap(va, 8 * MiB, 0, h, 0));
  CUmemAccessDesc access;
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK_OK(cuMemSetAccess(va, 8 * MiB, &access, 1));
  char buf[16];
  CHECK_OK(cuMemcpyHtoD(va + 8 * MiB - 16, buf, 16));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(va + 8 * MiB - 8, buf, 16));
  CHECK_OK(cuMemRelease(h)); /* still mapped: memory stays */
  EXPECT_TRUE(start - FreeBytes() == 8 * MiB);
  CHECK_OK(cuMemUnmap(va, 8 * MiB));
  EXPECT_TRUE(FreeBytes() == start);
  CHECK_OK(cuMemAddressFree(va, 16 * MiB));

  /* Arrays charge their size rounded up to the granule. */
  CUarray arr = NULL, arr3 = NULL;
  CUmipmappedArray mip = NULL;
  CUDA_ARRAY_DESCRIPTOR d2 = {1024, 1024, CU_AD_FORMAT_FLOAT, 4}; /* 16 MiB */
  CUDA_ARRAY3D_DESCRIPTOR d3 = {100, 100, 10, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
  CHECK_OK(cuArrayCreate(&arr, &d2));
  EXPECT_TRUE(start - FreeBytes() == 16 * MiB);
  CHECK_OK(cuArray3DCreate(&arr3, &d3));
  EXPECT_TRUE(start - FreeBytes() == 18 * MiB);
  CUDA_ARRAY3D_DESCRIPTOR dm = {2048, 2048, 0, CU_AD_FORMAT_FLOAT, 1, 0}; /* 16 MiB + 4 + 1 + ... */
  CHECK_OK(cuMipmappedArrayCreate(&mip, &dm, 3));
  EXPECT_TRUE(start - FreeBytes() == 18 * MiB + 22 * MiB);
  CHECK_OK(cuArrayDestroy(arr));
  CHECK_OK(cuArrayDestroy(arr3));
  CHECK_OK(cuMipmappedArrayDestroy(mip));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuArrayDestroy(arr));
  EXPECT_TRUE(FreeBytes() == start);
}

static void TestCopies(void) {
  CUdeviceptr a = 0, b = 0;
  char host[64];
  CHECK_OK(cuMemAlloc(&a, 1024));
  CHECK_OK(cuMemAlloc(&b, 1024));
  CHECK_OK(cuMemcpyHtoD(a, host, sizeof(host)));
  CHECK_OK(cuMemcpyDtoH(host, a + 1024 - 64, 64));
  CHECK_OK(cuMemcpyDtoD(b, a, 1024));
  CHECK_OK(cuMemcpy(b, (CUdeviceptr)(uintptr_t)host, 64));
  CHECK_OK(cuMemcpyAsync(a, b, 1024, NULL));
  CHECK_OK(cuMemcpyHtoDAsync(a, host, 64, NULL));
  CHECK_OK(cuMemsetD8(a, 0, 1024));
  CHECK_OK(cuMemsetD32(a, 0, 256));
  CHECK_OK(cuMemsetD32Async(a, 0, 256, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(host, a + 1000, 64)); /* past the end */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(a, NULL, 64));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemsetD32(a, 0, 257));
  CHECK_OK(cuMemFree(a));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(a, host, 1)); /* freed */
  CHECK_OK(cuMemFree(b));
}

static void TestModulesLaunchesStreamsEvents(void) {
  CUmodule mod = NULL;
  CUfunction busy = NULL, plain = NULL, pad = NULL;
  static const char image[] = "any image";
  EXPECT_RESULT(CUDA_ERROR_FILE_NOT_FOUND, cuModuleLoad(&mod, "/nonexistent/simgpu.cubin"));
  CHECK_OK(cuModuleLoadData(&mod, image));
  CHECK_OK(cuModuleGetFunction(&busy, mod, "busy_2000us"));
  CHECK_OK(cuModuleGetFunction(&plain, mod, "axpy"));
  /* 100 ms of work launched first makes what follows queue back to back behind it, so the
   * timings below are exact even when this process is descheduled between launches. */
  CHECK_OK(cuModuleGetFunction(&pad, mod, "busy_100000us"));

  CUstream s = NULL;
  CUevent e0 = NULL, e1 = NULL;
  CHECK_OK(cuStreamCreate(&s, 0));
  CHECK_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CHECK_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));

  double t0 = NowMs();
  CHECK_OK(cuLaunchKernel(pad, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuEventRecord(e0, s));
  CHECK_OK(cuLaunchKernel(busy, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuLaunchKernel(busy, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuEventRecord(e1, s));
  EXPECT_RESULT(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
  EXPECT_RESULT(CUDA_ERROR_NOT_READY, cuEventQuery(e1));
  CHECK_OK(cuStreamSynchronize(s));
  double waited = NowMs() - t0;
  EXPECT_TRUE(waited >= 103.9);
  CHECK_OK(cuStreamQuery(s));
  CHECK_OK(cuEventSynchronize(e1));
  float ms = 0;
  CHECK_OK(cuEventElapsedTime(&ms, e0, e1));
  EXPECT_TRUE(ms >= 3.99f && ms <= 4.01f);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuLaunchKernel(busy, 0, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuLaunchKernel(busy, 1, 1, 1, 2048, 1, 1, 0, s, NULL, NULL));

  /* Every launch path occupies the device: 9 launches of 2 ms plus one 10 us kernel. */
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s;
  CUDA_LAUNCH_PARAMS lp;
  memset(&lp, 0, sizeof(lp));
  lp.function = busy;
  lp.gridDimX = lp.gridDimY = lp.gridDimZ = 1;
  lp.blockDimX = lp.blockDimY = lp.blockDimZ = 1;
  lp.hStream = s;
  t0 = NowMs();
  CHECK_OK(cuLaunchKernel(pad, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuEventRecord(e0, s));
  CHECK_OK(cuLaunchKernel_ptsz(busy, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuLaunchKernelEx(&cfg, busy, NULL, NULL));
  CHECK_OK(cuLaunchKernelEx_ptsz(&cfg, busy, NULL, NULL));
  CHECK_OK(cuLaunchCooperativeKernel(busy, 1, 1, 1, 1, 1, 1, 0, s, NULL));
  CHECK_OK(cuLaunchCooperativeKernel_ptsz(busy, 1, 1, 1, 1, 1, 1, 0, s, NULL));
  CHECK_OK(cuLaunchCooperativeKernelMultiDevice(&lp, 1, 0));
  CHECK_OK(cuLaunchGridAsync(busy, 1, 1, s));
  CHECK_OK(cuLaunchKernel(plain, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuEventRecord(e1, s));
  CHECK_OK(cuLaunch(busy));           /* legacy stream */
  CHECK_OK(cuLaunchGrid(busy, 2, 2)); /* legacy stream */
  CHECK_OK(cuEventSynchronize(e1));
  CHECK_OK(cuEventElapsedTime(&ms, e0, e1));
  EXPECT_TRUE(ms >= 14.0f + 0.009f && ms <= 14.0f + 0.011f);
  CHECK_OK(cuCtxSynchronize());
  EXPECT_TRUE(NowMs() - t0 >= 117.9);

  /* Per-thread default stream and legacy stream handles. */
  CHECK_OK(cuLaunchKernel_ptsz(plain, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
  CHECK_OK(cuStreamSynchronize_ptsz(NULL));
  CHECK_OK(cuLaunchKernel(plain, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD, NULL, NULL));
  CHECK_OK(cuStreamSynchronize(CU_STREAM_LEGACY));
  CHECK_OK(cuEventRecord_ptsz(e0, NULL));

  /* Stream waits on an event recorded later on another stream's timeline. */
  CUstream s2 = NULL;
  CHECK_OK(cuStreamCreateWithPriority(&s2, CU_STREAM_NON_BLOCKING, 0));
  CHECK_OK(cuLaunchKernel(pad, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuLaunchKernel(busy, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuEventRecord(e0, s));
  CHECK_OK(cuStreamWaitEvent(s2, e0, 0));
  CHECK_OK(cuLaunchKernel(plain, 1, 1, 1, 1, 1, 1, 0, s2, NULL, NULL));
  CHECK_OK(cuEventRecord(e1, s2));
  CHECK_OK(cuEventSynchronize(e1));
  CHECK_OK(cuEventElapsedTime(&ms, e0, e1));
  EXPECT_TRUE(ms >= 0.0099f && ms <= 0.0101f);

  CUevent nt = NULL;
  CHECK_OK(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
  CHECK_OK(cuEventRecord(nt, s));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, e0, nt));
  CHECK_OK(cuEventDestroy(nt));

  CHECK_OK(cuStreamDestroy(s2));
  CHECK_OK(cuStreamDestroy(s));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(s));
  CHECK_OK(cuEventDestroy(e0));
  CHECK_OK(cuEventDestroy(e1));
  CHECK_OK(cuModuleUnload(mod));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE,
                cuLaunchKernel(busy, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
}

static void TestGraphs(void) {
  CUmodule mod = NULL;
  CUfunction busy = NULL, pad = NULL, slow = NULL;
  CUstream s = NULL;
  CUevent e0 = NULL, e1 = NULL;
  CHECK_OK(cuModuleLoadData(&mod, "x"));
  CHECK_OK(cuModuleGetFunction(&busy, mod, "busy_1000us"));
  CHECK_OK(cuModuleGetFunction(&pad, mod, "busy_100000us"));
  CHECK_OK(cuModuleGetFunction(&slow, mod, "busy_2000000us"));
  CHECK_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK_OK(cuEventCreate(&e0, 0));
  CHECK_OK(cuEventCreate(&e1, 0));

  /* Explicit kernel nodes. */
  CUgraph g = NULL;
  CUgraphNode n1 = NULL, n2 = NULL;
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof(kp));
  kp.func = busy;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  CHECK_OK(cuGraphCreate(&g, 0));
  CHECK_OK(cuGraphAddKernelNode(&n1, g, NULL, 0, &kp));
  CHECK_OK(cuGraphAddKernelNode(&n2, g, &n1, 1, &kp));
  size_t nodes = 0;
  CHECK_OK(cuGraphGetNodes(g, NULL, &nodes));
  EXPECT_TRUE(nodes == 2);
  CUgraphExec exec = NULL;
  CHECK_OK(cuGraphInstantiate(&exec, g, 0));
  CHECK_OK(cuLaunchKernel(pad, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuEventRecord(e0, s));
  CHECK_OK(cuGraphLaunch(exec, s));
  CHECK_OK(cuGraphLaunch_ptsz(exec, s));
  CHECK_OK(cuEventRecord(e1, s));
  CHECK_OK(cuStreamSynchronize(s));
  float ms = 0;
  CHECK_OK(cuEventElapsedTime(&ms, e0, e1));
  EXPECT_TRUE(ms >= 3.99f && ms <= 4.01f);
  CHECK_OK(cuGraphExecDestroy(exec));
  CHECK_OK(cuGraphDestroy(g));

  /* Stream capture records launches instead of running them. */
  CUstreamCaptureStatus st;
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_OK(cuStreamIsCapturing(s, &st));
  EXPECT_TRUE(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  double t0 = NowMs();
  CHECK_OK(cuLaunchKernel(slow, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuStreamEndCapture(s, &g));
  CHECK_OK(cuStreamIsCapturing(s, &st));
  EXPECT_TRUE(st == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_OK(cuStreamSynchronize(s));
  EXPECT_TRUE(NowMs() - t0 < 1000.0); /* the 2 s kernel did not run */
  CHECK_OK(cuGraphDestroy(g));
  CHECK_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < 3; ++i) CHECK_OK(cuLaunchKernel(busy, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuStreamEndCapture(s, &g));
  CHECK_OK(cuGraphGetNodes(g, NULL, &nodes));
  EXPECT_TRUE(nodes == 3);
  CHECK_OK(cuGraphInstantiateWithFlags(&exec, g, 0));
  CHECK_OK(cuLaunchKernel(pad, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuEventRecord(e0, s));
  CHECK_OK(cuGraphLaunch(exec, s));
  CHECK_OK(cuEventRecord(e1, s));
  CHECK_OK(cuEventSynchronize(e1));
  CHECK_OK(cuEventElapsedTime(&ms, e0, e1));
  EXPECT_TRUE(ms >= 2.99f && ms <= 3.01f);
  CHECK_OK(cuGraphExecDestroy(exec));
  CHECK_OK(cuGraphDestroy(g));
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_STATE, cuStreamEndCapture(s, &g));

  /* Synchronising a capturing stream invalidates the capture. */
  CHECK_OK(cuStreamBeginCapture_v2_ptsz(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamSynchronize(s));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture_ptsz(s, &g));
  EXPECT_TRUE(g == NULL);

  CHECK_OK(cuEventDestroy(e0));
  CHECK_OK(cuEventDestroy(e1));
  CHECK_OK(cuStreamDestroy(s));
  CHECK_OK(cuModuleUnload(mod));
}

static void TestContextTeardownFreesMemory(void) {
  size_t start = FreeBytes();
  CUcontext ctx = NULL;
  CUdeviceptr p = 0;
  CHECK_OK(cuCtxCreate(&ctx, 0, 1));
  CHECK_OK(cuMemAlloc(&p, 100 * MiB));
  size_t free1 = FreeBytes();                           /* device 1 */
  EXPECT_TRUE(free1 == 4 * GiB - 64 * MiB - 100 * MiB); /* its own context and allocation */
  CHECK_OK(cuCtxDestroy(ctx));
  CUcontext cur = NULL;
  CHECK_OK(cuCtxGetCurrent(&cur));
  if (cur == NULL) {
    CUcontext primary = NULL;
    CHECK_OK(cuDevicePrimaryCtxRetain(&primary, 0));
    CHECK_OK(cuCtxSetCurrent(primary));
  }
  EXPECT_TRUE(FreeBytes() == start);
}

/* cuCtxGetCurrent answers without the driver's mutex: a thread whose current context another
 * thread destroys must still be told it has none, on the first call after and every call after. */
struct CurrentProbe {
  CUcontext ctx;
  sem_t primed, destroyed;
  CUcontext seen_before, seen_after, seen_again;
};

static void* CurrentProbeThread(void* arg) {
  struct CurrentProbe* p = (struct CurrentProbe*)arg;
  cuCtxSetCurrent(p->ctx);
  cuCtxGetCurrent(&p->seen_before);
  cuCtxGetCurrent(&p->seen_before); /* the second call takes the fast path */
  sem_post(&p->primed);
  sem_wait(&p->destroyed);
  cuCtxGetCurrent(&p->seen_after);
  cuCtxGetCurrent(&p->seen_again);
  return NULL;
}

static void TestCurrentContextDestroyedByAnotherThread(void) {
  struct CurrentProbe p = {0};
  sem_init(&p.primed, 0, 0);
  sem_init(&p.destroyed, 0, 0);
  CUcontext previous = NULL;
  CHECK_OK(cuCtxGetCurrent(&previous));
  CHECK_OK(cuCtxCreate(&p.ctx, 0, 0));
  pthread_t thread;
  EXPECT_TRUE(pthread_create(&thread, NULL, CurrentProbeThread, &p) == 0);
  sem_wait(&p.primed);
  CHECK_OK(cuCtxDestroy(p.ctx));
  sem_post(&p.destroyed);
  pthread_join(thread, NULL);
  EXPECT_TRUE(p.seen_before == p.ctx);
  EXPECT_TRUE(p.seen_after == NULL);
  EXPECT_TRUE(p.seen_again == NULL);
  CHECK_OK(cuCtxSetCurrent(previous));
  sem_destroy(&p.primed);
  sem_destroy(&p.destroyed);
}

/* grid_<N>ns kernels take N ns per wave of blocks over the device's 40 SMs, launched directly or
 * from a captured graph. */
static void TestGeometryKernels(void) {
  CUmodule mod = NULL;
  CUfunction grid = NULL, pad = NULL;
  static const char image[] = "any image";
  CHECK_OK(cuModuleLoadData(&mod, image));
  CHECK_OK(cuModuleGetFunction(&grid, mod, "grid_1000ns"));
  CHECK_OK(cuModuleGetFunction(&pad, mod, "busy_100000us"));
  CUstream s = NULL;
  CUevent e0 = NULL, e1 = NULL;
  CHECK_OK(cuStreamCreate(&s, 0));
  CHECK_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CHECK_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  const unsigned blocks[] = {1, 40, 41, 4000};
  const float want_ms[] = {0.001f, 0.001f, 0.002f, 0.1f};
  for (int i = 0; i < 4; ++i) {
    CHECK_OK(cuLaunchKernel(pad, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK_OK(cuEventRecord(e0, s));
    CHECK_OK(cuLaunchKernel(grid, blocks[i], 1, 1, 256, 1, 1, 0, s, NULL, NULL));
    CHECK_OK(cuEventRecord(e1, s));
    CHECK_OK(cuEventSynchronize(e1));
    float ms = 0;
    CHECK_OK(cuEventElapsedTime(&ms, e0, e1));
    EXPECT_TRUE(ms >= want_ms[i] * 0.99f && ms <= want_ms[i] * 1.01f);
  }
  CUgraph g = NULL;
  CUgraphExec exec = NULL;
  CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_OK(cuLaunchKernel(grid, 20, 10, 1, 64, 1, 1, 0, s, NULL, NULL)); /* 200 blocks: 5 waves */
  CHECK_OK(cuStreamEndCapture(s, &g));
  CHECK_OK(cuGraphInstantiateWithFlags(&exec, g, 0));
  CHECK_OK(cuLaunchKernel(pad, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK_OK(cuEventRecord(e0, s));
  CHECK_OK(cuGraphLaunch(exec, s));
  CHECK_OK(cuEventRecord(e1, s));
  CHECK_OK(cuEventSynchronize(e1));
  float ms = 0;
  CHECK_OK(cuEventElapsedTime(&ms, e0, e1));
  EXPECT_TRUE(ms >= 0.00499f && ms <= 0.00501f);
  CHECK_OK(cuGraphExecDestroy(exec));
  CHECK_OK(cuGraphDestroy(g));
  CHECK_OK(cuStreamDestroy(s));
  CHECK_OK(cuEventDestroy(e0));
  CHECK_OK(cuEventDestroy(e1));
  CHECK_OK(cuModuleUnload(mod));
}

/* wait_<K> kernels wait for signal_<K> launched after them, on another device or stream of the
 * process; events belong to their context and go with it. */
static void TestWaitingKernelsAndEventContexts(void) {
  CUcontext previous = NULL;
  CHECK_OK(cuCtxGetCurrent(&previous));
  CUcontext ctx[2] = {NULL, NULL};
  CUstream s[2] = {NULL, NULL};
  CUfunction wait = NULL, signal = NULL, plain = NULL;
  CUevent behind = NULL, other = NULL;
  static const char image[] = "any image";
  for (int i = 1; i >= 0; --i) {
    CUmodule mod = NULL;
    CHECK_OK(cuCtxCreate(&ctx[i], 0, i));
    CHECK_OK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    CHECK_OK(cuModuleLoadData(&mod, image));
    CHECK_OK(cuModuleGetFunction(i == 0 ? &wait : &signal, mod, i == 0 ? "wait_7" : "signal_7"));
    if (i == 0) CHECK_OK(cuModuleGetFunction(&plain, mod, "busy_1000us"));
  }
  CHECK_OK(cuEventCreate(&behind, CU_EVENT_DEFAULT));
  CHECK_OK(cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, s[0], NULL, NULL));
  CHECK_OK(cuEventRecord(behind, s[0]));
  EXPECT_RESULT(CUDA_ERROR_NOT_READY, cuEventQuery(behind));
  EXPECT_RESULT(CUDA_ERROR_NOT_READY, cuStreamQuery(s[0]));
  double t0 = NowMs();
  CHECK_OK(cuCtxSetCurrent(ctx[1]));
  CHECK_OK(cuLaunchKernel(signal, 1, 1, 1, 1, 1, 1, 0, s[1], NULL, NULL));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(behind, s[1])); /* another context */
  CHECK_OK(cuEventSynchronize(behind));
  EXPECT_TRUE(NowMs() - t0 < 50);
  CHECK_OK(cuStreamSynchronize(s[0]));
  /* A signal set before the wait: the wait runs at once, after it. */
  CHECK_OK(cuCtxSetCurrent(ctx[0]));
  CHECK_OK(cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, s[0], NULL, NULL));
  CHECK_OK(cuLaunchKernel(plain, 1, 1, 1, 1, 1, 1, 0, s[0], NULL, NULL));
  CHECK_OK(cuCtxSynchronize());
  /* Events go with their context. */
  CHECK_OK(cuCtxSetCurrent(ctx[1]));
  CHECK_OK(cuEventCreate(&other, CU_EVENT_DEFAULT));
  CHECK_OK(cuCtxDestroy(ctx[1]));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(other));
  CHECK_OK(cuCtxSetCurrent(ctx[0]));
  CHECK_OK(cuEventDestroy(behind));
  CHECK_OK(cuCtxDestroy(ctx[0]));
  CHECK_OK(cuCtxSetCurrent(previous));
}

/* Stream capture rules: another thread's query fails while a global capture is active and
 * invalidates it; a thread-local capture ignores other threads; a relaxed thread is never refused.
 */
struct QueryProbe {
  CUcontext ctx;
  CUevent event;
  CUresult result;
};

static void* QueryFromAnotherThread(void* arg) {
  struct QueryProbe* q = (struct QueryProbe*)arg;
  cuCtxSetCurrent(q->ctx);
  q->result = cuEventQuery(q->event);
  return NULL;
}

static CUresult QueryElsewhere(CUcontext ctx, CUevent event) {
  struct QueryProbe q = {ctx, event, CUDA_ERROR_UNKNOWN};
  pthread_t thread;
  pthread_create(&thread, NULL, QueryFromAnotherThread, &q);
  pthread_join(thread, NULL);
  return q.result;
}

static void TestCaptureRules(void) {
  CUcontext ctx = NULL;
  CUstream s = NULL;
  CUevent e = NULL;
  CUgraph g = NULL;
  CHECK_OK(cuCtxGetCurrent(&ctx));
  CHECK_OK(cuStreamCreate(&s, 0));
  CHECK_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
  CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, QueryElsewhere(ctx, e));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));

  CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK_OK(QueryElsewhere(ctx, e));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuCtxSynchronize()); /* its own thread */
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));

  CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CHECK_OK(cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_TRUE(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
  CHECK_OK(cuEventQuery(e));
  CHECK_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CHECK_OK(cuStreamEndCapture(s, &g));
  CHECK_OK(cuGraphDestroy(g));
  CHECK_OK(cuEventDestroy(e));
  CHECK_OK(cuStreamDestroy(s));
}

int main(void) {
  /* Exact kernel times: no jitter or drift (kernel_timing.h). */
  UsePrivateState("count=2,memory=4GiB,sms=40,model=SimGPU-T,ctxmem=64MiB,jitter=0,drift=0");
  TestInitAndDevices();
  TestContexts();
  TestAllocations();
  TestVirtualMemory();
  TestCopies();
  TestModulesLaunchesStreamsEvents();
  TestGeometryKernels();
  TestWaitingKernelsAndEventContexts();
  TestCaptureRules();
  TestGraphs();
  TestContextTeardownFreesMemory();
  TestCurrentContextDestroyedByAnotherThread();
  return Finish("driver_paths_test");
}
