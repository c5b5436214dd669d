/* Virtual memory management hooks: cuMemCreate charges a device-location handle (host locations
 * pass through), and the charge lasts while the driver holds the memory: until the handle's
 * references (its creation, each cuMemRetainAllocationHandle) are released and its last mapping
 * unmapped, whichever comes last (vmm_map.h). A device-location handle the device cannot hold
 * may be created on the host instead (spill.h); the table records it under its account
 * (charge.h).
 *
 * The five calls of one process are serialised by one mutex held across the driver's call, so
 * that the table always matches the driver's state (a handle value the driver frees cannot be
 * handed out again before the table has let it go). They are rare next to allocations. */
#include "os.h"

#include <pthread.h>

#include "at_fork.h"
#include "charge.h"
#include "hooks.h"
#include "log.h"
#include "real.h"
#include "spill.h"
#include "state.h"
#include "vmm_map.h"

typedef __typeof__(&cuMemCreate) mem_create_fn;
typedef __typeof__(&cuMemRelease) mem_release_fn;
typedef __typeof__(&cuMemMap) mem_map_fn;
typedef __typeof__(&cuMemUnmap) mem_unmap_fn;
typedef __typeof__(&cuMemRetainAllocationHandle) mem_retain_fn;

static pthread_mutex_t g_vmm_mutex = PTHREAD_MUTEX_INITIALIZER;

static void hook_vmm_reset_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_vmm_mutex = fresh;
}
HOOK_RESET_IN_CHILD(hook_vmm_reset_in_child)

static int active(void) {
  return hook_state_init() == HOOK_ACTIVE;
}

CUresult hook_mem_create(void* real, CUmemGenericAllocationHandle* handle, size_t bytes,
                         const CUmemAllocationProp* prop, unsigned long long flags) {
  mem_create_fn fn = (mem_create_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(handle, bytes, prop, flags);
  HOOK_SCOPE();
  if (charge_failed_mode()) return CUDA_ERROR_NOT_INITIALIZED;
  /* Only device memory counts; host-location handles (NCCL) pass through. */
  if (prop == NULL || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return fn(handle, bytes, prop, flags);
  }
  CUdevice dev;
  __typeof__(&cuDeviceGet) get = REAL(cuDeviceGet);
  if (get == NULL || get(&dev, prop->location.id) != CUDA_SUCCESS) {
    return fn(handle, bytes, prop, flags); /* invalid ordinal: the driver refuses it */
  }
  struct charge c;
  CUresult rc = charge_reserve(dev, bytes, 1, &c);
  if (rc != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_vmm_mutex);
  rc = fn(handle, bytes, prop, flags);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY && c.active) {
    rc = spill_mem_create(real, handle, bytes, prop, flags, dev, &c);
  }
  if (rc != CUDA_SUCCESS || !c.active) {
    pthread_mutex_unlock(&g_vmm_mutex);
    return charge_finish(rc, &c, 0, 0); /* rolls the reservation back on failure */
  }
  int stale_index = -1;
  uint64_t stale_bytes = 0;
  int added = vmm_add_handle((uint64_t)*handle, c.index, c.bytes, &stale_index, &stale_bytes);
  pthread_mutex_unlock(&g_vmm_mutex);
  if (added < 0) {
    HOOK_LOG(HOOK_LOG_WARN, "out of host memory for the VMM table: %llu bytes stay charged",
             (unsigned long long)c.bytes);
  } else if (added > 0) {
    charge_give_back(stale_index, stale_bytes); /* freed by a path the library did not see */
  }
  return rc;
}

CUresult hook_mem_release(void* real, CUmemGenericAllocationHandle handle) {
  mem_release_fn fn = (mem_release_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook || !active()) return fn(handle);
  HOOK_SCOPE();
  pthread_mutex_lock(&g_vmm_mutex);
  CUresult rc = fn(handle);
  int index = -1;
  uint64_t bytes = 0;
  int now = rc == CUDA_SUCCESS ? vmm_release((uint64_t)handle, &index, &bytes) : 0;
  pthread_mutex_unlock(&g_vmm_mutex);
  if (now == 1) charge_give_back(index, bytes);
  return rc;
}

CUresult hook_mem_map(void* real, CUdeviceptr ptr, size_t size, size_t offset,
                      CUmemGenericAllocationHandle handle, unsigned long long flags) {
  mem_map_fn fn = (mem_map_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook || !active()) return fn(ptr, size, offset, handle, flags);
  HOOK_SCOPE();
  pthread_mutex_lock(&g_vmm_mutex);
  CUresult rc = fn(ptr, size, offset, handle, flags);
  /* A handle the table does not know (host memory, imported) has no charge to keep. */
  if (rc == CUDA_SUCCESS) vmm_map((uint64_t)ptr, (uint64_t)size, (uint64_t)handle);
  pthread_mutex_unlock(&g_vmm_mutex);
  return rc;
}

CUresult hook_mem_unmap(void* real, CUdeviceptr ptr, size_t size) {
  mem_unmap_fn fn = (mem_unmap_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook || !active()) return fn(ptr, size);
  HOOK_SCOPE();
  uint64_t bytes[CHARGE_ACCOUNTS] = {0};
  pthread_mutex_lock(&g_vmm_mutex);
  CUresult rc = fn(ptr, size);
  int released =
      rc == CUDA_SUCCESS ? vmm_unmap((uint64_t)ptr, (uint64_t)size, bytes, CHARGE_ACCOUNTS) : 0;
  pthread_mutex_unlock(&g_vmm_mutex);
  for (int i = 0; released > 0 && i < CHARGE_ACCOUNTS; ++i) {
    if (bytes[i] != 0) charge_give_back(i, bytes[i]);
  }
  return rc;
}

CUresult hook_mem_retain(void* real, CUmemGenericAllocationHandle* handle, void* addr) {
  mem_retain_fn fn = (mem_retain_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook || !active()) return fn(handle, addr);
  HOOK_SCOPE();
  pthread_mutex_lock(&g_vmm_mutex);
  CUresult rc = fn(handle, addr);
  /* A further reference: the charge stays until it is released too (NCCL's teardown retains
   * before it unmaps). A handle the table does not know has no charge. */
  if (rc == CUDA_SUCCESS && handle != NULL) vmm_retain((uint64_t)*handle);
  pthread_mutex_unlock(&g_vmm_mutex);
  return rc;
}

HOOK_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                                 const CUmemAllocationProp* prop, unsigned long long flags) {
  return hook_mem_create(real_fn(REAL_cuMemCreate), handle, bytes, prop, flags);
}
HOOK_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return hook_mem_release(real_fn(REAL_cuMemRelease), handle);
}
HOOK_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags) {
  return hook_mem_map(real_fn(REAL_cuMemMap), ptr, size, offset, handle, flags);
}
HOOK_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return hook_mem_unmap(real_fn(REAL_cuMemUnmap), ptr, size);
}
HOOK_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  return hook_mem_retain(real_fn(REAL_cuMemRetainAllocationHandle), handle, addr);
}
