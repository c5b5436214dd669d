#include "os.h"

#include "spill.h"

#include <stdlib.h>

#include "abi/library_env.h"
#include "alloc_map.h"
#include "at_fork.h"
#include "host_room.h"
#include "log.h"
#include "real.h"
#include "region.h"
#include "state.h"

/* Lines printed at any log level, once per process each: the first spill (the program now runs
 * slower, and should know why), and the first spill refused for lack of host memory (the
 * allocation failed under the container's limit). Later ones are logged at info. */
static int g_spilled_once;
static int g_short_once;

static void spill_reset_in_child(void) {
  g_spilled_once = 0;
  g_short_once = 0;
}
HOOK_RESET_IN_CHILD(spill_reset_in_child)

/* Where the host's memory figures are read: the test folder of TESSERA_HOST_ROOM_ROOT, unless the
 * limits come from the read-only file, where the environment changes nothing. */
static const char* host_root(void) {
  if (hook_limits()->from_fixed_path) return "";
  const char* root = getenv(TESSERA_ENV_HOST_ROOM_ROOT);
  return root != NULL ? root : "";
}

/* Charges `c` as spilled: spill.<i> must allow it and the host must have room. Returns 0, or -1
 * (logged) when the allocation is to fail. */
static int reserve(const struct charge* c) {
  uint64_t cap = hook_limit_spill(c->index);
  if (cap == 0) return -1; /* no spilling: the device's answer stands */
  if (region_spill_charge(c->index, c->bytes, cap) != 0) {
    HOOK_LOG(HOOK_LOG_INFO,
             "refused %llu bytes on device %d: the device is full and %llu of the %llu bytes "
             "that may be served from host memory (spill) are in use",
             (unsigned long long)c->bytes, c->index, (unsigned long long)region_spilled(c->index),
             (unsigned long long)cap);
    return -1;
  }
  struct host_room room;
  host_room_read(host_root(), &room);
  char why[256];
  if (host_room_check(&room, c->bytes, why, sizeof(why)) != 0) {
    region_spill_uncharge(c->index, c->bytes);
    int first = !__atomic_exchange_n(&g_short_once, 1, __ATOMIC_RELAXED);
    if (first || hook_log_level >= HOOK_LOG_INFO) {
      hook_log(first ? HOOK_LOG_WARN : HOOK_LOG_INFO,
               "refused %llu bytes on device %d: the device is full and host memory is short: %s",
               (unsigned long long)c->bytes, c->index, why);
    }
    return -1;
  }
  return 0;
}

/* The allocation in `c` was served from host memory: its account says so from now on. */
static void spilled(struct charge* c, const char* how) {
  int first = !__atomic_exchange_n(&g_spilled_once, 1, __ATOMIC_RELAXED);
  if (first || hook_log_level >= HOOK_LOG_INFO) {
    hook_log(first ? HOOK_LOG_WARN : HOOK_LOG_INFO,
             "device %d is full: serving %llu bytes from host memory (%s; %llu bytes of device %d "
             "are now in host memory); kernels reach them over the bus, slower",
             c->index, (unsigned long long)c->bytes, how,
             (unsigned long long)region_spilled(c->index), c->index);
  }
  c->index += TESSERA_MAX_DEVICES;
}

/* A spill the driver could not serve: its reservation given back, out of memory. */
static CUresult refuse(struct charge* c, const char* why, CUresult rc) {
  region_spill_uncharge(c->index, c->bytes);
  HOOK_LOG(HOOK_LOG_INFO,
           "refused %llu bytes on device %d: the device is full and %s (CUDA error %d)",
           (unsigned long long)c->bytes, c->index, why, (int)rc);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult spill_mem_alloc(struct charge* c, size_t bytes, CUdeviceptr* dptr) {
  if (reserve(c) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  void* host = NULL;
  CUresult rc =
      REAL(cuMemHostAlloc)
          ? REAL(cuMemHostAlloc)(&host, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE)
          : CUDA_ERROR_NOT_FOUND;
  CUdeviceptr device = 0;
  if (rc == CUDA_SUCCESS) {
    rc = REAL(cuMemHostGetDevicePointer_v2) ? REAL(cuMemHostGetDevicePointer_v2)(&device, host, 0)
                                            : CUDA_ERROR_NOT_FOUND;
    /* The application frees the pointer it was given, and the library must know it for the
     * allocation it made: with unified addressing (every 64-bit process on the devices current
     * drivers support) the device pointer of this memory is its host pointer. */
    if (rc == CUDA_SUCCESS && device != (CUdeviceptr)(uintptr_t)host) rc = CUDA_ERROR_NOT_SUPPORTED;
    if (rc != CUDA_SUCCESS) REAL(cuMemFreeHost)(host);
  }
  if (rc != CUDA_SUCCESS) return refuse(c, "mapped host memory could not be had", rc);
  *dptr = device;
  spilled(c, "mapped pinned memory");
  return CUDA_SUCCESS;
}

/* Waits for `stream` before its stream-ordered free of host memory, which cuMemFreeHost does at
 * once. The default stream (0) may be the legacy or the per-thread one depending on how the
 * application asked: the whole context is waited for then. */
static CUresult wait_before_free(CUstream stream) {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (REAL(cuStreamIsCapturing) && REAL(cuStreamIsCapturing)(stream, &capture) == CUDA_SUCCESS &&
      capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    return CUDA_ERROR_INVALID_VALUE; /* a captured free must name a graph allocation */
  }
  if (stream == NULL) {
    return REAL(cuCtxSynchronize) ? REAL(cuCtxSynchronize)() : CUDA_ERROR_NOT_FOUND;
  }
  return REAL(cuStreamSynchronize) ? REAL(cuStreamSynchronize)(stream) : CUDA_ERROR_NOT_FOUND;
}

CUresult spill_mem_free(struct charge* c, CUdeviceptr dptr, int async, CUstream stream) {
  CUresult rc = async ? wait_before_free(stream) : CUDA_SUCCESS;
  if (rc == CUDA_SUCCESS) {
    rc = REAL(cuMemFreeHost) ? REAL(cuMemFreeHost)((void*)(uintptr_t)dptr) : CUDA_ERROR_NOT_FOUND;
  }
  if (rc != CUDA_SUCCESS) return charge_release(rc, c, ALLOC_POINTER, dptr); /* put back */
  int index = c->index - TESSERA_MAX_DEVICES;
  region_spill_uncharge(index, c->bytes); /* the spilled part first */
  region_uncharge(index, c->bytes);
  return CUDA_SUCCESS;
}

CUresult spill_mem_create(void* create, CUmemGenericAllocationHandle* handle, size_t bytes,
                          const CUmemAllocationProp* prop, unsigned long long flags, CUdevice dev,
                          struct charge* c) {
  __typeof__(&cuMemCreate) fn = (__typeof__(&cuMemCreate))create;
  if (reserve(c) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  /* The host NUMA node closest to the device (-1: the system has no NUMA, where the driver wants
   * node 0). */
  int numa = -1;
  if (REAL(cuDeviceGetAttribute) == NULL ||
      REAL(cuDeviceGetAttribute)(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev) != CUDA_SUCCESS) {
    numa = -1;
  }
  CUmemAllocationProp host = *prop;
  host.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  host.location.id = numa >= 0 ? numa : 0;
  CUresult rc = fn(handle, bytes, &host, flags);
  /* A driver without host NUMA allocations: the host as a whole, which takes no handle types
   * (not shareable with other processes). */
  if (rc != CUDA_SUCCESS && prop->requestedHandleTypes == CU_MEM_HANDLE_TYPE_NONE) {
    host.location.type = CU_MEM_LOCATION_TYPE_HOST;
    host.location.id = 0;
    rc = fn(handle, bytes, &host, flags);
  }
  if (rc != CUDA_SUCCESS) return refuse(c, "the driver could not create them on the host", rc);
  int numa_node = host.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  spilled(c, numa_node ? "cuMemCreate on the host's NUMA node" : "cuMemCreate on the host");
  return CUDA_SUCCESS;
}
