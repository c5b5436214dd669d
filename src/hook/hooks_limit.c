/* cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE): the device heap of malloc() in kernels is device
 * memory of the context. The heap a context is created with is part of its measured cost; a
 * larger one is charged for the difference (in granules), recorded with the context so that its
 * destruction releases it, and a smaller one gives the difference back. */
#include "os.h"

#include "alloc_map.h"
#include "charge.h"
#include "hooks.h"
#include "real.h"
#include "state.h"

typedef __typeof__(&cuCtxSetLimit) set_limit_fn;

/* The heap's current size in the current context; -1 when the driver does not say. */
static int heap_size(uint64_t* bytes) {
  size_t value = 0;
  __typeof__(&cuCtxGetLimit) get = REAL(cuCtxGetLimit);
  if (get == NULL || get(&value, CU_LIMIT_MALLOC_HEAP_SIZE) != CUDA_SUCCESS) return -1;
  *bytes = value;
  return 0;
}

CUresult hook_ctx_set_limit(void* real, CUlimit limit, size_t value) {
  set_limit_fn fn = (set_limit_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook || limit != CU_LIMIT_MALLOC_HEAP_SIZE) return fn(limit, value);
  HOOK_SCOPE();
  int mode = hook_state_init();
  if (mode == HOOK_FAILED) return CUDA_ERROR_NOT_INITIALIZED;
  CUcontext ctx;
  CUdevice dev;
  uint64_t old = 0;
  if (mode == HOOK_INACTIVE || hook_current_context(&ctx, &dev) != 0 || heap_size(&old) != 0) {
    return fn(limit, value);
  }
  uint64_t granule = hook_granularity(dev);
  uint64_t want = hook_round_up(value, granule), have = hook_round_up(old, granule);
  uint64_t key = (uint64_t)(uintptr_t)ctx;
  struct charge grown = {.index = -1};
  if (want > have) {
    CUresult rc = charge_reserve(dev, want - have, 0, &grown);
    if (rc != CUDA_SUCCESS) return rc;
  }
  CUresult rc = fn(limit, value);
  if (rc != CUDA_SUCCESS || want == have) {
    return charge_finish(rc, &grown, 0, 0); /* rolls a reservation back */
  }
  /* The context's heap charge so far, plus the growth or less the shrinking. */
  struct charge total;
  charge_take(ALLOC_HEAP, key, &total);
  if (grown.active) {
    grown.bytes += total.active ? total.bytes : 0;
    grown.context = key;
    return charge_finish(rc, &grown, ALLOC_HEAP, key);
  }
  if (!total.active) return rc; /* nothing charged beyond the heap it was created with */
  uint64_t less = have - want < total.bytes ? have - want : total.bytes;
  charge_shrink(&total, less);
  if (total.bytes > 0) charge_finish(rc, &total, ALLOC_HEAP, key);
  return rc;
}

HOOK_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  return hook_ctx_set_limit(real_fn(REAL_cuCtxSetLimit), limit, value);
}
