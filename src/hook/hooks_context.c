/* Context hooks: cuInit (refused when the limits are malformed) and context creation, whose
 * device memory is charged; destroying or resetting a context also releases the allocations the
 * driver freed with it. A context's cost is asked from the driver: NVML's free memory of the
 * device before and after the creation; the first measurement on a device is kept in the region
 * and reserved before later creations, and each creation then settles its own measurement. */
#include "os.h"

#include <pthread.h>

#include "alloc_map.h"
#include "at_fork.h"
#include "charge.h"
#include "compute.h"
#include "context_cost.h"
#include "hooks.h"
#include "log.h"
#include "real.h"
#include "state.h"

typedef __typeof__(&cuInit) init_fn;
typedef CUresult (*ctx_create_v2_fn)(CUcontext*, unsigned int, CUdevice);
typedef CUresult (*ctx_create_v3_fn)(CUcontext*, CUexecAffinityParam*, int, unsigned int, CUdevice);
typedef CUresult (*ctx_create_v4_fn)(CUcontext*, CUctxCreateParams*, unsigned int, CUdevice);
typedef CUresult (*ctx_destroy_fn)(CUcontext);
typedef CUresult (*primary_retain_fn)(CUcontext*, CUdevice);
typedef CUresult (*primary_release_fn)(CUdevice);

CUresult hook_init(void* real, unsigned int flags) {
  init_fn fn = (init_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(flags);
  HOOK_SCOPE();
  if (charge_failed_mode()) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = fn(flags);
  /* Now, rather than in the first allocation or launch, which should not wait for a lookup. */
  if (rc == CUDA_SUCCESS) real_resolve_cuda();
  return rc;
}

struct ctx_call {
  int version; /* 2, 3, 4: cuCtxCreate ABI; 0: cuDevicePrimaryCtxRetain */
  void* real;
  CUcontext* ctx;
  unsigned int flags;
  CUdevice dev;
  void* params;
  int count;
};

static CUresult call_create(const struct ctx_call* k) {
  switch (k->version) {
    case 2:
      return ((ctx_create_v2_fn)k->real)(k->ctx, k->flags, k->dev);
    case 3:
      return ((ctx_create_v3_fn)k->real)(k->ctx, (CUexecAffinityParam*)k->params, k->count,
                                         k->flags, k->dev);
    case 4:
      return ((ctx_create_v4_fn)k->real)(k->ctx, (CUctxCreateParams*)k->params, k->flags, k->dev);
    default:
      return ((primary_retain_fn)k->real)(k->ctx, k->dev);
  }
}

/* Undoes a creation whose memory did not fit. */
static void undo_create(const struct ctx_call* k) {
  if (k->version == 0) {
    __typeof__(&cuDevicePrimaryCtxRelease_v2) release = REAL(cuDevicePrimaryCtxRelease_v2);
    if (release) release(k->dev);
  } else {
    __typeof__(&cuCtxDestroy_v2) destroy = REAL(cuCtxDestroy_v2);
    if (destroy && k->ctx) destroy(*k->ctx);
  }
}

static CUresult create_charged(const struct ctx_call* k) {
  if (k->real == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return call_create(k);
  HOOK_SCOPE();
  int mode = hook_state_init();
  if (mode == HOOK_FAILED) return CUDA_ERROR_NOT_INITIALIZED;
  if (mode == HOOK_INACTIVE) return call_create(k);
  int index = hook_device_index(k->dev);
  if (index < 0) {
    /* An ordinal the driver does not have gets the driver's answer (CUDA_ERROR_INVALID_DEVICE);
     * a device of the machine that is not the container's has no memory for a context. */
    CUdevice probe;
    __typeof__(&cuDeviceGet) get = REAL(cuDeviceGet);
    if (get == NULL || get(&probe, k->dev) != CUDA_SUCCESS) return call_create(k);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  struct charge c;
  uint64_t hint = context_cost_hint(index);
  CUresult rc = charge_reserve(k->dev, hint, 0, &c);
  if (rc != CUDA_SUCCESS) return rc;
  struct context_probe probe;
  context_probe_begin(&probe, k->dev, index);
  unsigned generation = hook_context_generation();
  rc = call_create(k);
  if (rc != CUDA_SUCCESS) return charge_finish(rc, &c, 0, 0);
  uint64_t cost = 0;
  if (context_probe_end(&probe, &cost) == 0) {
    if (cost > c.bytes && charge_grow(&c, cost - c.bytes) != CUDA_SUCCESS) {
      HOOK_LOG(HOOK_LOG_INFO, "a context on device %d costs %llu bytes: over the limit", index,
               (unsigned long long)cost);
      undo_create(k);
      return charge_finish(CUDA_ERROR_OUT_OF_MEMORY, &c, 0, 0);
    }
    if (cost < c.bytes) charge_shrink(&c, c.bytes - cost);
  }
  if (k->ctx != NULL && *k->ctx != NULL) hook_note_context(*k->ctx, k->dev, generation);
  if (k->version == 0) {
    /* Remembered with the primary context's handle, to release its allocations on reset. Two
     * threads retaining it first at once both get here: only one keeps its charge. */
    c.context = k->ctx ? (uint64_t)(uintptr_t)*k->ctx : 0;
    charge_finish_first(&c, ALLOC_PRIMARY, (uint64_t)k->dev);
    return rc;
  }
  return charge_finish(rc, &c, ALLOC_CONTEXT, k->ctx ? (uint64_t)(uintptr_t)*k->ctx : 0);
}

CUresult hook_ctx_create_v2(void* real, CUcontext* ctx, unsigned int flags, CUdevice dev) {
  struct ctx_call k = {.version = 2, .real = real, .ctx = ctx, .flags = flags, .dev = dev};
  return create_charged(&k);
}

CUresult hook_ctx_create_v3(void* real, CUcontext* ctx, CUexecAffinityParam* params, int count,
                            unsigned int flags, CUdevice dev) {
  struct ctx_call k = {.version = 3,
                       .real = real,
                       .ctx = ctx,
                       .flags = flags,
                       .dev = dev,
                       .params = params,
                       .count = count};
  return create_charged(&k);
}

CUresult hook_ctx_create_v4(void* real, CUcontext* ctx, CUctxCreateParams* params,
                            unsigned int flags, CUdevice dev) {
  struct ctx_call k = {
      .version = 4, .real = real, .ctx = ctx, .flags = flags, .dev = dev, .params = params};
  return create_charged(&k);
}

CUresult hook_ctx_destroy(void* real, CUcontext ctx) {
  ctx_destroy_fn fn = (ctx_destroy_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(ctx);
  HOOK_SCOPE();
  struct charge c;
  uint64_t key = (uint64_t)(uintptr_t)ctx;
  compute_context_ending(ctx, 0, 0, 1);
  charge_take(ALLOC_CONTEXT, key, &c);
  CUresult rc = charge_release(fn(ctx), &c, ALLOC_CONTEXT, key);
  /* The driver freed everything allocated in the context with it; the handle may come back. */
  if (rc == CUDA_SUCCESS) {
    hook_forget_contexts();
    charge_release_context(key);
    charge_refresh_held();
  }
  return rc;
}

/* Serialises the retains that may create a primary context, so that one thread creates it and
 * measures its cost while the others wait and then only retain it. */
static pthread_mutex_t g_primary_mutex = PTHREAD_MUTEX_INITIALIZER;

static void hook_context_reset_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_primary_mutex = fresh;
}
HOOK_RESET_IN_CHILD(hook_context_reset_in_child)

static int primary_active(CUdevice dev) {
  unsigned int flags = 0;
  int active = 0;
  __typeof__(&cuDevicePrimaryCtxGetState) state = REAL(cuDevicePrimaryCtxGetState);
  return state != NULL && state(dev, &flags, &active) == CUDA_SUCCESS && active;
}

CUresult hook_primary_retain(void* real, CUcontext* ctx, CUdevice dev) {
  primary_retain_fn fn = (primary_retain_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(ctx, dev);
  struct ctx_call k = {.version = 0, .real = real, .ctx = ctx, .dev = dev};
  if (hook_state_init() != HOOK_ACTIVE) return create_charged(&k);
  /* Only the retain that creates the primary context costs memory. */
  if (primary_active(dev)) return fn(ctx, dev);
  pthread_mutex_lock(&g_primary_mutex);
  CUresult rc = primary_active(dev) ? fn(ctx, dev) : create_charged(&k);
  pthread_mutex_unlock(&g_primary_mutex);
  return rc;
}

static CUresult primary_drop(void* real, CUdevice dev, int reset) {
  primary_release_fn fn = (primary_release_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(dev);
  HOOK_SCOPE();
  if (reset) compute_context_ending(NULL, dev, 1, 1);
  CUresult rc = fn(dev);
  if (rc != CUDA_SUCCESS || hook_state_init() != HOOK_ACTIVE) return rc;
  if (!reset) {
    unsigned int flags = 0;
    int active = 1;
    __typeof__(&cuDevicePrimaryCtxGetState) state = REAL(cuDevicePrimaryCtxGetState);
    if (state == NULL || state(dev, &flags, &active) != CUDA_SUCCESS || active) return rc;
    compute_context_ending(NULL, dev, 1, 0); /* the driver destroyed the events with it */
  }
  /* The primary context is gone, and with it every allocation made in it. */
  hook_forget_contexts();
  struct charge c;
  if (charge_take(ALLOC_PRIMARY, (uint64_t)dev, &c)) {
    charge_release(CUDA_SUCCESS, &c, 0, 0);
    charge_release_context(c.context);
  }
  charge_refresh_held();
  return rc;
}

CUresult hook_primary_release(void* real, CUdevice dev) {
  return primary_drop(real, dev, 0);
}
CUresult hook_primary_reset(void* real, CUdevice dev) {
  return primary_drop(real, dev, 1);
}

HOOK_EXPORT CUresult cuInit(unsigned int flags) {
  return hook_init(real_fn(REAL_cuInit), flags);
}
HOOK_EXPORT CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice dev) {
  return hook_ctx_create_v2(real_fn(REAL_cuCtxCreate_v2), ctx, flags, dev);
}
HOOK_EXPORT CUresult cuCtxCreate_v3(CUcontext* ctx, CUexecAffinityParam* params, int count,
                                    unsigned int flags, CUdevice dev) {
  return hook_ctx_create_v3(real_fn(REAL_cuCtxCreate_v3), ctx, params, count, flags, dev);
}
HOOK_EXPORT CUresult cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams* params, unsigned int flags,
                                    CUdevice dev) {
  return hook_ctx_create_v4(real_fn(REAL_cuCtxCreate_v4), ctx, params, flags, dev);
}
HOOK_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return hook_ctx_destroy(real_fn(REAL_cuCtxDestroy_v2), ctx);
}
HOOK_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  return hook_primary_retain(real_fn(REAL_cuDevicePrimaryCtxRetain), ctx, dev);
}
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
HOOK_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return hook_primary_release(real_fn(REAL_cuDevicePrimaryCtxRelease), dev);
}
HOOK_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return hook_primary_release(real_fn(REAL_cuDevicePrimaryCtxRelease_v2), dev);
}
HOOK_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return hook_primary_reset(real_fn(REAL_cuDevicePrimaryCtxReset), dev);
}
HOOK_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return hook_primary_reset(real_fn(REAL_cuDevicePrimaryCtxReset_v2), dev);
}
