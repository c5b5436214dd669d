/* Stream capture rules (capture_rules.h) beyond the queries and synchronisations of
 * driver_paths_test: synchronous allocations and frees as potentially unsafe calls, the legacy
 * stream's implicit dependency on a blocking stream's capture, ending a capture from the wrong
 * thread, work on an invalidated capture, and capture into an existing graph. One 4 GiB device. */
#include <pthread.h>

#include "test_support.h"

#define MiB (1024ull * 1024ull)

static CUcontext g_ctx;
static CUfunction g_busy; /* busy_1000us */

/* Runs `call(arg)` on a new thread (GLOBAL mode, the context current) and returns its result. */
typedef CUresult (*Call)(void* arg);
struct Elsewhere {
  Call call;
  void* arg;
  CUresult result;
};

static void* RunElsewhere(void* p) {
  struct Elsewhere* e = (struct Elsewhere*)p;
  cuCtxSetCurrent(g_ctx);
  e->result = e->call(e->arg);
  return NULL;
}

static CUresult OnAnotherThread(Call call, void* arg) {
  struct Elsewhere e = {call, arg, CUDA_ERROR_UNKNOWN};
  pthread_t thread;
  pthread_create(&thread, NULL, RunElsewhere, &e);
  pthread_join(thread, NULL);
  return e.result;
}

static CUresult Launch(CUstream s) {
  return cuLaunchKernel(g_busy, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
}

static CUresult AllocAndFree(void* unused) {
  (void)unused;
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc(&p, MiB);
  if (r == CUDA_SUCCESS) r = cuMemFree(p);
  return r;
}

static CUresult EndCaptureOf(void* stream) {
  CUgraph g = NULL;
  CUresult r = cuStreamEndCapture((CUstream)stream, &g);
  if (g != NULL) cuGraphDestroy(g);
  return r;
}

static CUstreamCaptureStatus StatusOf(CUstream s) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CHECK_OK(cuStreamIsCapturing(s, &st));
  return st;
}

/* Each synchronous allocation or free, while the calling thread captures in global mode: refused
 * with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture invalidated, nothing allocated or
 * freed. */
enum { kAlloc, kPitch, kManaged, kFree, kFreeNull, kAllocHost, kHostAlloc, kFreeHost, kCalls };

static CUresult SyncMemoryCall(int which, CUdeviceptr live, void* live_host) {
  CUdeviceptr p = 0;
  size_t pitch = 0;
  void* h = NULL;
  switch (which) {
    case kAlloc:
      return cuMemAlloc(&p, MiB);
    case kPitch:
      return cuMemAllocPitch(&p, &pitch, 1000, 10, 4);
    case kManaged:
      return cuMemAllocManaged(&p, MiB, CU_MEM_ATTACH_GLOBAL);
    case kFree:
      return cuMemFree(live);
    case kFreeNull:
      return cuMemFree(0);
    case kAllocHost:
      return cuMemAllocHost(&h, 4096);
    case kHostAlloc:
      return cuMemHostAlloc(&h, 4096, 0);
    default:
      return cuMemFreeHost(live_host);
  }
}

static void TestSynchronousAllocationsAreUnsafe(void) {
  CUstream s = NULL;
  CUgraph g = NULL;
  CUdeviceptr live = 0, async = 0, relaxed = 0;
  void* live_host = NULL;
  size_t free_bytes = 0, total = 0;
  CHECK_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK_OK(cuMemAlloc(&live, MiB));
  CHECK_OK(cuMemAllocHost(&live_host, 4096));
  CHECK_OK(cuMemGetInfo(&free_bytes, &total));
  for (int which = 0; which < kCalls; ++which) {
    CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult r = SyncMemoryCall(which, live, live_host);
    if (r != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
      fprintf(stderr, "synchronous memory call %d during its thread's capture returned %d\n", which,
              (int)r);
      ++g_failures;
    }
    EXPECT_TRUE(StatusOf(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  }
  size_t after = 0;
  CHECK_OK(cuMemGetInfo(&after, &total));
  EXPECT_TRUE(after == free_bytes); /* nothing allocated, nothing freed */

  /* From another thread: refused while the capture is global, allowed while thread-local. */
  CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, OnAnotherThread(AllocAndFree, NULL));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK_OK(OnAnotherThread(AllocAndFree, NULL));
  CHECK_OK(cuStreamEndCapture(s, &g));
  CHECK_OK(cuGraphDestroy(g));

  /* A relaxed thread may allocate; a stream-ordered allocation is captured, not refused. */
  CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CHECK_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CHECK_OK(cuMemAlloc(&relaxed, MiB));
  CHECK_OK(cuMemFree(relaxed));
  CHECK_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CHECK_OK(cuMemAllocAsync(&async, MiB, s));
  CHECK_OK(cuMemFreeAsync(async, s));
  CHECK_OK(cuStreamEndCapture(s, &g));
  CHECK_OK(cuGraphDestroy(g));

  CHECK_OK(cuMemFree(live));
  CHECK_OK(cuMemFreeHost(live_host));
  CHECK_OK(cuStreamDestroy(s));
}

/* The legacy stream while a blocking stream of its context captures: every use fails with
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates the capture; cuStreamIsCapturing answers the
 * same error and invalidates nothing. A non-blocking stream's capture leaves it usable. */
static void TestLegacyStreamDependsOnBlockingCapture(void) {
  CUstream blocking = NULL, nonblocking = NULL;
  CUevent e = NULL;
  CUgraph g = NULL;
  CUdeviceptr p = 0;
  char host[64] = {0};
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CHECK_OK(cuStreamCreate(&blocking, 0));
  CHECK_OK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
  CHECK_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
  CHECK_OK(cuMemAlloc(&p, MiB));

  CHECK_OK(cuStreamBeginCapture_v2(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuStreamIsCapturing(NULL, &st));
  EXPECT_TRUE(StatusOf(blocking) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, Launch(NULL));
  EXPECT_TRUE(StatusOf(blocking) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(blocking, &g));

  /* Each other use of the legacy stream. */
  for (int use = 0; use < 5; ++use) {
    CHECK_OK(cuStreamBeginCapture_v2(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUresult r = use == 0   ? cuEventRecord(e, NULL)
                 : use == 1 ? cuStreamWaitEvent(NULL, e, 0)
                 : use == 2 ? cuStreamSynchronize(NULL)
                 : use == 3 ? cuMemcpyHtoD(p, host, sizeof(host)) /* synchronous: legacy */
                            : cuMemsetD8Async(p, 0, 64, NULL);
    if (r != CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) {
      fprintf(stderr, "legacy stream use %d during a blocking capture returned %d\n", use, (int)r);
      ++g_failures;
    }
    EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(blocking, &g));
  }

  /* The per-thread default stream is a blocking stream too. */
  CHECK_OK(cuStreamBeginCapture_v2_ptsz(NULL, CU_STREAM_CAPTURE_MODE_RELAXED));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, Launch(NULL));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture_ptsz(NULL, &g));

  CHECK_OK(cuStreamBeginCapture_v2(nonblocking, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK_OK(Launch(NULL));
  CHECK_OK(cuStreamIsCapturing(NULL, &st));
  EXPECT_TRUE(st == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_OK(cuStreamEndCapture(nonblocking, &g));
  CHECK_OK(cuGraphDestroy(g));
  CHECK_OK(cuStreamSynchronize(NULL)); /* usable again */

  CHECK_OK(cuMemFree(p));
  CHECK_OK(cuEventDestroy(e));
  CHECK_OK(cuStreamDestroy(blocking));
  CHECK_OK(cuStreamDestroy(nonblocking));
}

/* A capture begun GLOBAL or THREAD_LOCAL is ended by its own thread: another thread gets
 * CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD and the capture goes on. A relaxed one by any thread. */
static void TestEndCaptureFromAnotherThread(void) {
  CUstream s = NULL;
  CUgraph g = NULL;
  CHECK_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const CUstreamCaptureMode strict[] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL};
  for (int i = 0; i < 2; ++i) {
    CHECK_OK(cuStreamBeginCapture_v2(s, strict[i]));
    CHECK_OK(Launch(s));
    EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, OnAnotherThread(EndCaptureOf, s));
    EXPECT_TRUE(StatusOf(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_OK(cuStreamEndCapture(s, &g));
    size_t nodes = 0;
    CHECK_OK(cuGraphGetNodes(g, NULL, &nodes));
    EXPECT_TRUE(nodes == 1);
    CHECK_OK(cuGraphDestroy(g));
  }
  CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK_OK(OnAnotherThread(EndCaptureOf, s));
  EXPECT_TRUE(StatusOf(s) == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_OK(cuStreamDestroy(s));
}

/* Once invalidated, a capture refuses further work with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
 * until cuStreamEndCapture, which answers the same and ends it. */
static void TestInvalidatedCaptureRefusesWork(void) {
  CUstream s = NULL;
  CUevent e = NULL;
  CUgraph g = NULL;
  CUdeviceptr p = 0;
  CHECK_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
  CHECK_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_OK(Launch(s));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuCtxSynchronize());
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, Launch(s));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuEventRecord(e, s));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamWaitEvent(s, e, 0));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuMemAllocAsync(&p, MiB, s));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamQuery(s));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  EXPECT_TRUE(g == NULL);
  CHECK_OK(Launch(s)); /* the capture is over: work runs again */
  CHECK_OK(cuEventRecord(e, s));
  CHECK_OK(cuStreamSynchronize(s));
  CHECK_OK(cuEventDestroy(e));
  CHECK_OK(cuStreamDestroy(s));
}

static CUresult QueryEvent(void* event) {
  return cuEventQuery((CUevent)event);
}

/* cuStreamBeginCaptureToGraph: the captured nodes join the program's graph after the given
 * dependencies, cuStreamEndCapture returns that graph, the rules are those of any capture, and an
 * invalidated capture leaves the graph to the program. */
static void TestCaptureIntoAnExistingGraph(void) {
  CUstream s = NULL;
  CUevent e0 = NULL, e1 = NULL;
  CUgraph g = NULL, other = NULL, out = NULL;
  CUgraphNode first = NULL, foreign = NULL;
  CUgraphExec exec = NULL;
  CUDA_KERNEL_NODE_PARAMS params;
  memset(&params, 0, sizeof(params));
  params.func = g_busy;
  params.gridDimX = params.gridDimY = params.gridDimZ = 1;
  params.blockDimX = params.blockDimY = params.blockDimZ = 1;
  CHECK_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CHECK_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  CHECK_OK(cuGraphCreate(&g, 0));
  CHECK_OK(cuGraphCreate(&other, 0));
  CHECK_OK(cuGraphAddKernelNode(&first, g, NULL, 0, &params));
  CHECK_OK(cuGraphAddKernelNode(&foreign, other, NULL, 0, &params));

  const CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuStreamBeginCaptureToGraph(s, NULL, NULL, NULL, 0, mode));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 1, mode));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuStreamBeginCaptureToGraph(s, g, &foreign, NULL, 1, mode));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                cuStreamBeginCaptureToGraph(NULL, g, NULL, NULL, 0, mode));

  CUgraphEdgeData edge;
  memset(&edge, 0, sizeof(edge));
  CHECK_OK(cuStreamBeginCaptureToGraph(s, g, &first, &edge, 1, mode));
  EXPECT_TRUE(StatusOf(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK_OK(Launch(s));
  CHECK_OK(Launch(s));
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_STATE, cuGraphDestroy(g)); /* still captured into */
  CHECK_OK(cuStreamEndCapture(s, &out));
  EXPECT_TRUE(out == g);
  size_t nodes = 0;
  CHECK_OK(cuGraphGetNodes(g, NULL, &nodes));
  EXPECT_TRUE(nodes == 3);
  CHECK_OK(cuGraphInstantiateWithFlags(&exec, g, 0));
  CHECK_OK(cuEventRecord(e0, s));
  CHECK_OK(cuGraphLaunch(exec, s));
  CHECK_OK(cuEventRecord(e1, s));
  CHECK_OK(cuEventSynchronize(e1));
  float ms = 0;
  CHECK_OK(cuEventElapsedTime(&ms, e0, e1));
  EXPECT_TRUE(ms >= 2.99f && ms <= 3.01f); /* the node it had and the two captured */
  CHECK_OK(cuGraphExecDestroy(exec));

  /* Another thread's query is refused as with any global capture; the graph stays the
   * program's. */
  CHECK_OK(cuStreamBeginCaptureToGraph_ptsz(s, g, NULL, NULL, 0, mode));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, OnAnotherThread(QueryEvent, e1));
  EXPECT_RESULT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture_ptsz(s, &out));
  EXPECT_TRUE(out == NULL);
  CHECK_OK(cuGraphGetNodes(g, NULL, &nodes));
  EXPECT_TRUE(nodes == 3);

  CHECK_OK(cuGraphDestroy(g));
  CHECK_OK(cuGraphDestroy(other));
  CHECK_OK(cuEventDestroy(e0));
  CHECK_OK(cuEventDestroy(e1));
  CHECK_OK(cuStreamDestroy(s));
}

int main(void) {
  UsePrivateState("count=1,memory=4GiB,ctxmem=64MiB,jitter=0,drift=0"); /* exact kernel times */
  CUmodule mod = NULL;
  static const char image[] = "capture_rules_test module";
  CHECK_OK(cuInit(0));
  CHECK_OK(cuDevicePrimaryCtxRetain(&g_ctx, 0));
  CHECK_OK(cuCtxSetCurrent(g_ctx));
  CHECK_OK(cuModuleLoadData(&mod, image));
  CHECK_OK(cuModuleGetFunction(&g_busy, mod, "busy_1000us"));
  TestSynchronousAllocationsAreUnsafe();
  TestLegacyStreamDependsOnBlockingCapture();
  TestEndCaptureFromAnotherThread();
  TestInvalidatedCaptureRefusesWork();
  TestCaptureIntoAnExistingGraph();
  CHECK_OK(cuModuleUnload(mod));
  return Finish("capture_rules_test");
}
