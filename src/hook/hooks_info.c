/* Reported values: cuMemGetInfo, cuDeviceTotalMem and NVML's memory info show the container's
 * limit as the total and the container's usage (from the shared region) against it, so that
 * frameworks size their pools to the limit and nvidia-smi in the container shows it. With
 * spilling (spill.h) the limit may exceed the device: the total is then the limit up to the
 * device's memory plus spill.<i>, the usage counts device and host memory together, and free adds
 * what spill.<i> has left to what the device has free. All arithmetic is clamped; null output
 * pointers are left to the driver to reject. */
#include "os.h"

#include "charge.h"
#include "hooks.h"
#include "limits_watch.h"
#include "real.h"
#include "region.h"
#include "state.h"

typedef __typeof__(&cuMemGetInfo_v2) mem_get_info_fn;
typedef __typeof__(&cuDeviceTotalMem_v2) device_total_mem_fn;
typedef __typeof__(&nvmlDeviceGetMemoryInfo) nvml_memory_fn;
typedef __typeof__(&nvmlDeviceGetMemoryInfo_v2) nvml_memory_v2_fn;

static uint64_t min_u64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}

/* The limit of container device `index` (0 = none). */
static uint64_t limit_of(int index) {
  return index >= 0 ? hook_limit_memory(index) : 0;
}

static uint64_t add_clamped(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The memory the container can have on device `index` (a mapped index): the limit, up to the
 * device's `device_total` plus what may be served from host memory. */
static uint64_t total_of(int index, uint64_t limit, uint64_t device_total) {
  return min_u64(limit, add_clamped(device_total, hook_limit_spill(index)));
}

/* What may still be served from host memory on device `index`. */
static uint64_t spill_left(int index) {
  uint64_t cap = hook_limit_spill(index);
  if (cap == 0) return 0;
  uint64_t spilled = region_spilled(index);
  return cap > spilled ? cap - spilled : 0;
}

CUresult hook_mem_get_info(void* real, size_t* free_bytes, size_t* total_bytes) {
  mem_get_info_fn fn = (mem_get_info_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(free_bytes, total_bytes);
  HOOK_SCOPE();
  int mode = hook_state_init();
  if (mode == HOOK_FAILED) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = fn(free_bytes, total_bytes);
  if (rc != CUDA_SUCCESS || mode != HOOK_ACTIVE) return rc;
  limits_watch_if_due(); /* a process without a reaper reports a changed limit too */
  charge_refresh_held();
  CUdevice dev;
  if (hook_current_device(&dev) != 0) return rc;
  int index = hook_device_index(dev);
  uint64_t limit = limit_of(index);
  if (limit == 0) return rc;
  uint64_t used = region_used(index);
  uint64_t left = limit > used ? limit - used : 0;
  if (total_bytes != NULL) *total_bytes = (size_t)total_of(index, limit, *total_bytes);
  if (free_bytes != NULL) {
    *free_bytes = (size_t)min_u64(left, add_clamped(*free_bytes, spill_left(index)));
  }
  return rc;
}

CUresult hook_device_total_mem(void* real, size_t* bytes, CUdevice dev) {
  device_total_mem_fn fn = (device_total_mem_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(bytes, dev);
  HOOK_SCOPE();
  int mode = hook_state_init();
  if (mode == HOOK_FAILED) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = fn(bytes, dev);
  if (rc != CUDA_SUCCESS || mode != HOOK_ACTIVE || bytes == NULL) return rc;
  limits_watch_if_due();
  int index = hook_device_index(dev);
  uint64_t limit = limit_of(index);
  if (limit != 0) *bytes = (size_t)total_of(index, limit, *bytes);
  return rc;
}

/* Rewrites total/used/free for the container; `reserved` may be NULL (v1 struct). */
static void rewrite_nvml(nvmlDevice_t device, unsigned long long* total, unsigned long long* used,
                         unsigned long long* free_bytes, unsigned long long* reserved) {
  limits_watch_if_due();
  charge_refresh_held();
  int index = hook_nvml_device_index(device);
  uint64_t limit = limit_of(index);
  if (limit == 0) return;
  uint64_t new_total = total_of(index, limit, *total);
  uint64_t new_used = min_u64(region_used(index), new_total);
  uint64_t new_reserved = reserved ? min_u64(*reserved, new_total - new_used) : 0;
  *total = new_total;
  *used = new_used;
  if (reserved) *reserved = new_reserved;
  *free_bytes =
      min_u64(new_total - new_used - new_reserved, add_clamped(*free_bytes, spill_left(index)));
}

nvmlReturn_t hook_nvml_memory_info(void* real, nvmlDevice_t device, nvmlMemory_t* memory) {
  nvml_memory_fn fn = (nvml_memory_fn)real;
  if (fn == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
  if (tessera_in_hook) return fn(device, memory);
  HOOK_SCOPE();
  int mode = hook_state_init();
  if (mode == HOOK_FAILED) return NVML_ERROR_UNKNOWN;
  nvmlReturn_t rc = fn(device, memory);
  if (rc == NVML_SUCCESS && mode == HOOK_ACTIVE && memory != NULL) {
    rewrite_nvml(device, &memory->total, &memory->used, &memory->free, NULL);
  }
  return rc;
}

nvmlReturn_t hook_nvml_memory_info_v2(void* real, nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  nvml_memory_v2_fn fn = (nvml_memory_v2_fn)real;
  if (fn == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
  if (tessera_in_hook) return fn(device, memory);
  HOOK_SCOPE();
  int mode = hook_state_init();
  if (mode == HOOK_FAILED) return NVML_ERROR_UNKNOWN;
  nvmlReturn_t rc = fn(device, memory);
  if (rc == NVML_SUCCESS && mode == HOOK_ACTIVE && memory != NULL) {
    rewrite_nvml(device, &memory->total, &memory->used, &memory->free, &memory->reserved);
  }
  return rc;
}

HOOK_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  return hook_mem_get_info(real_fn(REAL_cuMemGetInfo_v2), free_bytes, total_bytes);
}
HOOK_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  return hook_device_total_mem(real_fn(REAL_cuDeviceTotalMem_v2), bytes, dev);
}
HOOK_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return hook_nvml_memory_info(real_fn(REAL_nvmlDeviceGetMemoryInfo), device, memory);
}
HOOK_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return hook_nvml_memory_info_v2(real_fn(REAL_nvmlDeviceGetMemoryInfo_v2), device, memory);
}
