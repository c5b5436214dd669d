/* Launch hooks: every kernel launch path and cuGraphLaunch pass through the compute limiter
 * (compute.h) before the driver call, plus the exported symbols that programs linking
 * libcuda.so.1 reach by symbol interposition. */
#include "os.h"

#include "compute.h"
#include "graph_charge.h"
#include "hooks.h"
#include "real.h"

typedef __typeof__(&cuLaunchKernel) launch_kernel_fn;
typedef __typeof__(&cuLaunchKernelEx) launch_kernel_ex_fn;
typedef __typeof__(&cuLaunchCooperativeKernel) launch_cooperative_fn;
typedef __typeof__(&cuLaunchCooperativeKernelMultiDevice) launch_multi_fn;
typedef __typeof__(&cuLaunch) launch_fn;
typedef __typeof__(&cuLaunchGrid) launch_grid_fn;
typedef __typeof__(&cuLaunchGridAsync) launch_grid_async_fn;
typedef __typeof__(&cuGraphLaunch) graph_launch_fn;

/* The hooks are inlined into the exported symbols below (and kept out of line for the
 * cuGetProcAddress wrappers): one call level less on the exported path, whose return the CPU
 * tends to mispredict after the driver's own system calls. */
#define LAUNCH_HOOK inline __attribute__((always_inline)) CUresult

/* Runs `call` governed by the limiter for (key, stream) (compute_kernel_key: a kernel at its
 * shape); `ptsz_real` is the _ptsz variant's real
 * function, which tells what a 0 stream means when the caller reached us through a wrapper. */
#define GOVERNED(real, ptsz_id, key, stream, call)                                           \
  do {                                                                                       \
    if (real == NULL) return CUDA_ERROR_NOT_FOUND;                                           \
    if (tessera_in_hook) return call;                                                        \
    HOOK_SCOPE();                                                                            \
    struct compute_launch l;                                                                 \
    int ptsz =                                                                               \
        (stream) == NULL && (ptsz_id) >= 0 && real == real_fn((enum hook_real_id)(ptsz_id)); \
    CUresult rc = compute_begin((uintptr_t)(key), (stream), ptsz, &l);                       \
    if (rc != CUDA_SUCCESS) return rc;                                                       \
    return compute_end(&l, call);                                                            \
  } while (0)

LAUNCH_HOOK hook_launch_kernel(void* real, CUfunction f, unsigned int gx, unsigned int gy,
                               unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
                               unsigned int shared, CUstream stream, void** params, void** extra) {
  launch_kernel_fn fn = (launch_kernel_fn)real;
  GOVERNED(fn, (int)REAL_cuLaunchKernel_ptsz, compute_kernel_key(f, gx, gy, gz, bx, by, bz), stream,
           fn(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra));
}

LAUNCH_HOOK hook_launch_kernel_ex(void* real, const CUlaunchConfig* config, CUfunction f,
                                  void** params, void** extra) {
  launch_kernel_ex_fn fn = (launch_kernel_ex_fn)real;
  CUstream stream = config ? config->hStream : NULL;
  uintptr_t key = config
                      ? compute_kernel_key(f, config->gridDimX, config->gridDimY, config->gridDimZ,
                                           config->blockDimX, config->blockDimY, config->blockDimZ)
                      : (uintptr_t)f;
  GOVERNED(fn, (int)REAL_cuLaunchKernelEx_ptsz, key, stream, fn(config, f, params, extra));
}

LAUNCH_HOOK hook_launch_cooperative(void* real, CUfunction f, unsigned int gx, unsigned int gy,
                                    unsigned int gz, unsigned int bx, unsigned int by,
                                    unsigned int bz, unsigned int shared, CUstream stream,
                                    void** params) {
  launch_cooperative_fn fn = (launch_cooperative_fn)real;
  GOVERNED(fn, (int)REAL_cuLaunchCooperativeKernel_ptsz,
           compute_kernel_key(f, gx, gy, gz, bx, by, bz), stream,
           fn(f, gx, gy, gz, bx, by, bz, shared, stream, params));
}

/* Governed as one launch of the first entry's function on the current device. */
LAUNCH_HOOK hook_launch_cooperative_multi(void* real, CUDA_LAUNCH_PARAMS* list, unsigned int count,
                                          unsigned int flags) {
  launch_multi_fn fn = (launch_multi_fn)real;
  CUstream stream = list && count ? list[0].hStream : NULL;
  uintptr_t key = list && count
                      ? compute_kernel_key(list[0].function, list[0].gridDimX, list[0].gridDimY,
                                           list[0].gridDimZ, list[0].blockDimX, list[0].blockDimY,
                                           list[0].blockDimZ)
                      : 0;
  GOVERNED(fn, -1, key, stream, fn(list, count, flags));
}

LAUNCH_HOOK hook_launch(void* real, CUfunction f) {
  launch_fn fn = (launch_fn)real;
  GOVERNED(fn, -1, compute_kernel_key(f, 1, 1, 1, 1, 1, 1), (CUstream)NULL, fn(f));
}

LAUNCH_HOOK hook_launch_grid(void* real, CUfunction f, int width, int height) {
  launch_grid_fn fn = (launch_grid_fn)real;
  GOVERNED(fn, -1, compute_kernel_key(f, (unsigned)width, (unsigned)height, 1, 1, 1, 1),
           (CUstream)NULL, fn(f, width, height));
}

LAUNCH_HOOK hook_launch_grid_async(void* real, CUfunction f, int width, int height,
                                   CUstream stream) {
  launch_grid_async_fn fn = (launch_grid_async_fn)real;
  GOVERNED(fn, -1, compute_kernel_key(f, (unsigned)width, (unsigned)height, 1, 1, 1, 1), stream,
           fn(f, width, height, stream));
}

/* A graph is charged as one unit: its expected cost is the measured span of the whole graph. */
LAUNCH_HOOK hook_graph_launch(void* real, CUgraphExec exec, CUstream stream) {
  graph_launch_fn fn = (graph_launch_fn)real;
  GOVERNED(fn, (int)REAL_cuGraphLaunch_ptsz, exec, stream, graph_launch(exec, fn, stream));
}

HOOK_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                    unsigned int bx, unsigned int by, unsigned int bz,
                                    unsigned int shared, CUstream stream, void** params,
                                    void** extra) {
  return hook_launch_kernel(real_fn(REAL_cuLaunchKernel), f, gx, gy, gz, bx, by, bz, shared, stream,
                            params, extra);
}
HOOK_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                         unsigned int gz, unsigned int bx, unsigned int by,
                                         unsigned int bz, unsigned int shared, CUstream stream,
                                         void** params, void** extra) {
  return hook_launch_kernel(real_fn(REAL_cuLaunchKernel_ptsz), f, gx, gy, gz, bx, by, bz, shared,
                            stream, params, extra);
}
HOOK_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                      void** extra) {
  return hook_launch_kernel_ex(real_fn(REAL_cuLaunchKernelEx), config, f, params, extra);
}
HOOK_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                           void** params, void** extra) {
  return hook_launch_kernel_ex(real_fn(REAL_cuLaunchKernelEx_ptsz), config, f, params, extra);
}
HOOK_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                               unsigned int gz, unsigned int bx, unsigned int by,
                                               unsigned int bz, unsigned int shared,
                                               CUstream stream, void** params) {
  return hook_launch_cooperative(real_fn(REAL_cuLaunchCooperativeKernel), f, gx, gy, gz, bx, by, bz,
                                 shared, stream, params);
}
HOOK_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                    unsigned int gz, unsigned int bx,
                                                    unsigned int by, unsigned int bz,
                                                    unsigned int shared, CUstream stream,
                                                    void** params) {
  return hook_launch_cooperative(real_fn(REAL_cuLaunchCooperativeKernel_ptsz), f, gx, gy, gz, bx,
                                 by, bz, shared, stream, params);
}
HOOK_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* list,
                                                          unsigned int count, unsigned int flags) {
  return hook_launch_cooperative_multi(real_fn(REAL_cuLaunchCooperativeKernelMultiDevice), list,
                                       count, flags);
}
HOOK_EXPORT CUresult cuLaunch(CUfunction f) {
  return hook_launch(real_fn(REAL_cuLaunch), f);
}
HOOK_EXPORT CUresult cuLaunchGrid(CUfunction f, int width, int height) {
  return hook_launch_grid(real_fn(REAL_cuLaunchGrid), f, width, height);
}
HOOK_EXPORT CUresult cuLaunchGridAsync(CUfunction f, int width, int height, CUstream stream) {
  return hook_launch_grid_async(real_fn(REAL_cuLaunchGridAsync), f, width, height, stream);
}
HOOK_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  return hook_graph_launch(real_fn(REAL_cuGraphLaunch), exec, stream);
}
HOOK_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  return hook_graph_launch(real_fn(REAL_cuGraphLaunch_ptsz), exec, stream);
}
