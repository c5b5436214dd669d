/* The compute (SM) limiter: a container's share of each device's time, hard or elastic.
 *
 * Every governed launch is bracketed: compute_begin charges its expected device time (the mean of
 * event-timed samples, compute_estimates.h, times the NVML loop's gain, compute_loop.h) to the
 * container's budget in the shared region and sleeps while the container is ahead of its share;
 * compute_end times the launch when it was drawn for a sample. Elastic containers are charged
 * only while the device is contended. How and why: docs/compute-limit.md, "How it works".
 *
 *   struct compute_launch launch;
 *   CUresult rc = compute_begin(key, stream, ptsz, &launch);
 *   if (rc == CUDA_SUCCESS) rc = compute_end(&launch, real_launch(...));
 *
 * Thread-safety: all functions are thread-safe; a struct compute_launch belongs to one call. */
#ifndef TESSERA_HOOK_COMPUTE_H_
#define TESSERA_HOOK_COMPUTE_H_

#include <stdint.h>

#include "abi/cuda_driver.h"

/* One launch, between compute_begin and compute_end. The other fields are set only when `timed`. */
struct compute_launch {
  int timed;        /* a sample was started: events recorded around the launch */
  int index;        /* container device index */
  uintptr_t key;    /* function or graph exec */
  CUstream stream;  /* stream as the driver sees it (per-thread default made explicit) */
  uint64_t host_ns; /* when the start event's record returned */
  uint64_t call_ns; /* when the driver's launch was called */
};

/* The key of a kernel launch: the function at its launch shape, since a kernel's time follows its
 * grid and blocks. Never 0. */
static inline uintptr_t compute_kernel_key(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                           unsigned bx, unsigned by, unsigned bz) {
  uint64_t a = (uint64_t)gx | (uint64_t)gy << 32;
  uint64_t b = (uint64_t)gz | (uint64_t)bx << 16 | (uint64_t)by << 32 | (uint64_t)bz << 48;
  uintptr_t key = (uintptr_t)f ^ (uintptr_t)(a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full);
  return key != 0 ? key : 1;
}

/* Before a launch of `key` on `stream` (`ptsz`: a 0 stream is the per-thread default stream).
 * Returns CUDA_SUCCESS when the launch may go on (compute_end must then follow the driver call),
 * CUDA_ERROR_NOT_INITIALIZED when the library's configuration failed. */
CUresult compute_begin(uintptr_t key, CUstream stream, int ptsz, struct compute_launch* l);

/* compute_end's work for a timed launch. */
CUresult compute_end_timed(struct compute_launch* l, CUresult rc);

/* After the driver call that returned `rc`. Returns rc. */
static inline CUresult compute_end(struct compute_launch* l, CUresult rc) {
  return __builtin_expect(l->timed, 0) ? compute_end_timed(l, rc) : rc;
}

/* A context ends: `context` (cuCtxDestroy), or with `whole_device` the primary context of
 * `device` (cuDevicePrimaryCtxReset, the last cuDevicePrimaryCtxRelease). The sampler's events made
 * in it are destroyed first when `destroy` (the call has not been made yet) and forgotten in any
 * case: a later context can get the same handle, and the events are gone with this one. */
void compute_context_ending(CUcontext context, CUdevice device, int whole_device, int destroy);

/* A stream capture may begin / has ended in the process. While any is active the sampler makes
 * no driver call the capture forbids (cuEventQuery, ...; hooks_capture.c): it takes no sample and
 * leaves the one in flight for later. */
void compute_capture_begun(void);
void compute_capture_ended(void);

/* The limits' cores.<i> or ceiling.<i> changed (limits_watch.c, after hook_limits_update): every
 * launch from the next one on is charged at the new limits, a process without a limit before
 * turns the limiter on, and each device whose percent changed has its loop's measure start again
 * from now (compute_loop.h, loop_limit_changed). */
void compute_limits_changed(void);

/* For tests and the benchmark: the cost the limiter expects for `key`, in ns (0 = unknown). */
uint64_t compute_expected_ns(uintptr_t key);

#endif /* TESSERA_HOOK_COMPUTE_H_ */
