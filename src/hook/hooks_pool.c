/* Stream-ordered allocation hooks: cuMemAllocAsync and cuMemAllocFromPoolAsync charge the growth
 * of the pool they allocate from (pool_charge.h); pool creation, destruction and trimming, and
 * the calls that hand out a device's pools, tell the library where each pool lives and what it
 * holds. Frees (cuMemFreeAsync) change nothing: the pool keeps the memory. */
#include "os.h"

#include "charge.h"
#include "hooks.h"
#include "pool_charge.h"
#include "real.h"
#include "state.h"

typedef __typeof__(&cuMemAllocAsync) mem_alloc_async_fn;
typedef __typeof__(&cuMemAllocFromPoolAsync) mem_alloc_pool_fn;
typedef __typeof__(&cuMemPoolCreate) pool_create_fn;
typedef __typeof__(&cuMemPoolDestroy) pool_destroy_fn;
typedef __typeof__(&cuMemPoolTrimTo) pool_trim_fn;
typedef __typeof__(&cuDeviceGetMemPool) device_pool_fn;

static CUresult call_alloc_async(const struct pool_alloc_call* k) {
  return ((mem_alloc_async_fn)k->real)(k->dptr, k->bytes, k->stream);
}

static CUresult call_alloc_from_pool(const struct pool_alloc_call* k) {
  return ((mem_alloc_pool_fn)k->real)(k->dptr, k->bytes, k->pool, k->stream);
}

/* The hook of both allocation calls; k->pool NULL: the current pool of the current device. */
static CUresult alloc_from_pool(struct pool_alloc_call* k) {
  if (k->real == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return k->call(k);
  HOOK_SCOPE();
  int mode = hook_state_init();
  if (mode == HOOK_FAILED) return CUDA_ERROR_NOT_INITIALIZED;
  CUcontext ctx;
  CUdevice dev;
  if (mode == HOOK_INACTIVE || hook_current_context(&ctx, &dev) != 0) return k->call(k);
  if (k->pool == NULL) {
    __typeof__(&cuDeviceGetMemPool) current = REAL(cuDeviceGetMemPool);
    __typeof__(&cuDeviceGetDefaultMemPool) fallback = REAL(cuDeviceGetDefaultMemPool);
    CUmemoryPool pool = NULL;
    if ((current == NULL || current(&pool, dev) != CUDA_SUCCESS) &&
        (fallback == NULL || fallback(&pool, dev) != CUDA_SUCCESS)) {
      return k->call(k); /* the driver fails the allocation as well */
    }
    k->pool = pool;
  }
  return pool_alloc(k, dev);
}

CUresult hook_mem_alloc_async(void* real, CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  struct pool_alloc_call k = {call_alloc_async, real, dptr, bytes, NULL, stream};
  return alloc_from_pool(&k);
}

CUresult hook_mem_alloc_from_pool_async(void* real, CUdeviceptr* dptr, size_t bytes,
                                        CUmemoryPool pool, CUstream stream) {
  struct pool_alloc_call k = {call_alloc_from_pool, real, dptr, bytes, pool, stream};
  if (pool == NULL) return real ? call_alloc_from_pool(&k) : CUDA_ERROR_NOT_FOUND;
  return alloc_from_pool(&k);
}

CUresult hook_mem_pool_create(void* real, CUmemoryPool* pool, const CUmemPoolProps* props) {
  pool_create_fn fn = (pool_create_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(pool, props);
  HOOK_SCOPE();
  if (charge_failed_mode()) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = fn(pool, props);
  if (rc != CUDA_SUCCESS || pool == NULL || props == NULL) return rc;
  CUdevice dev = -1; /* host locations */
  __typeof__(&cuDeviceGet) get = REAL(cuDeviceGet);
  if (props->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
      (get == NULL || get(&dev, props->location.id) != CUDA_SUCCESS)) {
    return rc;
  }
  pool_note(*pool, dev);
  return rc;
}

CUresult hook_mem_pool_destroy(void* real, CUmemoryPool pool) {
  pool_destroy_fn fn = (pool_destroy_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook || hook_state_init() != HOOK_ACTIVE) return fn(pool);
  HOOK_SCOPE();
  int outstanding = pool_outstanding(pool);
  CUresult rc = fn(pool);
  if (rc == CUDA_SUCCESS) pool_destroyed(pool, outstanding);
  return rc;
}

CUresult hook_mem_pool_trim(void* real, CUmemoryPool pool, size_t keep) {
  pool_trim_fn fn = (pool_trim_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(pool, keep);
  HOOK_SCOPE();
  CUresult rc = fn(pool, keep);
  if (rc == CUDA_SUCCESS) pool_refresh_all();
  return rc;
}

/* cuDeviceGetMemPool and cuDeviceGetDefaultMemPool: the pool they answer lives on `dev`. */
CUresult hook_device_pool(void* real, CUmemoryPool* pool, CUdevice dev) {
  device_pool_fn fn = (device_pool_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(pool, dev);
  HOOK_SCOPE();
  CUresult rc = fn(pool, dev);
  if (rc == CUDA_SUCCESS && pool != NULL) pool_note(*pool, dev);
  return rc;
}

HOOK_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return hook_mem_alloc_async(real_fn(REAL_cuMemAllocAsync), dptr, bytes, stream);
}
HOOK_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return hook_mem_alloc_async(real_fn(REAL_cuMemAllocAsync_ptsz), dptr, bytes, stream);
}
HOOK_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                             CUstream stream) {
  return hook_mem_alloc_from_pool_async(real_fn(REAL_cuMemAllocFromPoolAsync), dptr, bytes, pool,
                                        stream);
}
HOOK_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes,
                                                  CUmemoryPool pool, CUstream stream) {
  return hook_mem_alloc_from_pool_async(real_fn(REAL_cuMemAllocFromPoolAsync_ptsz), dptr, bytes,
                                        pool, stream);
}
HOOK_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  return hook_mem_pool_create(real_fn(REAL_cuMemPoolCreate), pool, props);
}
HOOK_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  return hook_mem_pool_destroy(real_fn(REAL_cuMemPoolDestroy), pool);
}
HOOK_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  return hook_mem_pool_trim(real_fn(REAL_cuMemPoolTrimTo), pool, keep);
}
HOOK_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  return hook_device_pool(real_fn(REAL_cuDeviceGetMemPool), pool, dev);
}
HOOK_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  return hook_device_pool(real_fn(REAL_cuDeviceGetDefaultMemPool), pool, dev);
}
