#include "os.h"

#include "state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "at_fork.h"
#include "log.h"
#include "real.h"
#include "region.h"

#define DEFAULT_GRANULE (2ull << 20)

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_mode;
int hook_state_ready;
static struct hook_limits g_limits;

/* hook_index_of[]: INDEX_NONE for a device that is not one of the container's. */
#define INDEX_NONE (-1000)
int hook_index_of[HOOK_MAX_CUDA_DEVICES];
uint64_t hook_granule_of[HOOK_MAX_CUDA_DEVICES];
static pthread_mutex_t g_map_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_nvml_once = PTHREAD_ONCE_INIT;
static int g_nvml_ready; /* 1 initialised, -1 unavailable (set once, by nvml_init_once) */

static void state_reset_in_child(void) {
  hook_forget_contexts(); /* the parent's contexts, cached by the forking thread, are not ours */
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_map_mutex = fresh;
}
HOOK_RESET_IN_CHILD(state_reset_in_child)

static void init_once(void) {
  int saved = tessera_in_hook;
  tessera_in_hook = 1;
  hook_log_init();
  hook_limits_load(TESSERA_LIMITS_PATH, &g_limits);
  if (g_limits.error) {
    hook_log(HOOK_LOG_ERROR, "CUDA is disabled in this process: %s", g_limits.message);
    g_mode = HOOK_FAILED;
  } else if (!g_limits.active) {
    HOOK_LOG(HOOK_LOG_DEBUG, "no limits configured (%s): passing CUDA calls through",
             g_limits.source);
    g_mode = HOOK_INACTIVE;
  } else {
    char error[768];
    if (region_open(g_limits.region_path, error, sizeof(error)) != 0) {
      hook_log(HOOK_LOG_ERROR, "CUDA is disabled in this process: %s", error);
      g_mode = HOOK_FAILED;
    } else {
      hook_at_fork_arm();
      g_mode = HOOK_ACTIVE;
      HOOK_LOG(HOOK_LOG_INFO, "limits from %s, region %s", g_limits.source, g_limits.region_path);
    }
  }
  __atomic_store_n(&hook_state_ready, g_mode + 1, __ATOMIC_RELEASE);
  tessera_in_hook = saved;
}

int hook_state_init_once(void) {
  pthread_once(&g_once, init_once);
  return g_mode;
}

const struct hook_limits* hook_limits(void) {
  return &g_limits;
}

/* Container devices this process showed in the region (bit i: index i), under g_map_mutex. */
static uint32_t g_published;

void hook_limits_update(const struct hook_limits* next) {
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    __atomic_store_n(&g_limits.memory[i], next->memory[i], __ATOMIC_RELAXED);
    __atomic_store_n(&g_limits.spill[i], next->spill[i], __ATOMIC_RELAXED);
    __atomic_store_n(&g_limits.cores[i], next->cores[i], __ATOMIC_RELAXED);
    __atomic_store_n(&g_limits.ceiling[i], next->ceiling[i], __ATOMIC_RELAXED);
  }
  pthread_mutex_lock(&g_map_mutex);
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    if (g_published & (1u << i)) {
      region_publish_device(i, next->memory[i], (uint32_t)next->cores[i]);
    }
  }
  pthread_mutex_unlock(&g_map_mutex);
}

/* The CUDA device's UUID, as NVML and the limits file write it but without the prefix
 * ("6b0e...-..."): a MIG instance's UUID (cuDeviceGetUuid_v2 gives it in MIG mode; the first ABI
 * gives the whole GPU's) is written MIG-..., a GPU's GPU-..., and the bytes do not say which.
 * Returns 0, or -1 when the driver does not say. */
static int device_uuid(CUdevice dev, char* out, size_t size) {
  CUuuid raw;
  __typeof__(&cuDeviceGetUuid_v2) get_v2 = REAL(cuDeviceGetUuid_v2);
  __typeof__(&cuDeviceGetUuid) get_v1 = REAL(cuDeviceGetUuid);
  if ((get_v2 == NULL || get_v2(&raw, dev) != CUDA_SUCCESS) &&
      (get_v1 == NULL || get_v1(&raw, dev) != CUDA_SUCCESS)) {
    return -1;
  }
  const unsigned char* b = (const unsigned char*)raw.bytes;
  snprintf(out, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
           b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
  return 0;
}

/* `uuid` without its GPU- or MIG- prefix. */
static const char* uuid_body(const char* uuid) {
  if (strncasecmp(uuid, "GPU-", 4) == 0 || strncasecmp(uuid, "MIG-", 4) == 0) return uuid + 4;
  return uuid;
}

static int file_index_of_uuid(const char* uuid) {
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    if (g_limits.has_uuid[i] && strcasecmp(uuid_body(g_limits.uuid[i]), uuid_body(uuid)) == 0) {
      return i;
    }
  }
  return -1;
}

static int file_has_uuids(void) {
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    if (g_limits.has_uuid[i]) return 1;
  }
  return 0;
}

static void nvml_init_once(void) {
  __typeof__(&nvmlInit_v2) init = REAL(nvmlInit_v2);
  g_nvml_ready = init != NULL && init() == NVML_SUCCESS ? 1 : -1;
}

/* NVML is initialised once per process, whichever threads ask at the same time. */
static int nvml_ready(void) {
  pthread_once(&g_nvml_once, nvml_init_once);
  return g_nvml_ready == 1;
}

/* NVML's handle of the device whose UUID body (device_uuid) is `uuid`: a GPU, else a MIG
 * instance. Returns 0, or -1. */
static int nvml_by_uuid(const char* uuid, nvmlDevice_t* device) {
  __typeof__(&nvmlDeviceGetHandleByUUID) by_uuid = REAL(nvmlDeviceGetHandleByUUID);
  if (by_uuid == NULL || !nvml_ready()) return -1;
  for (int mig = 0; mig < 2; ++mig) {
    char name[104];
    snprintf(name, sizeof(name), "%s%s", mig ? "MIG-" : "GPU-", uuid);
    if (by_uuid(name, device) == NVML_SUCCESS) return 0;
  }
  return -1;
}

/* The container index from CUDA_VISIBLE_DEVICES when NVML is not available. */
static int index_from_visible_devices(int ordinal) {
  const char* visible = getenv("CUDA_VISIBLE_DEVICES");
  if (visible == NULL) return ordinal;
  int position = 0;
  for (const char* p = visible; *p;) {
    char* end;
    long value = strtol(p, &end, 10);
    if (end == p) break;
    if (position == ordinal) return (int)value;
    ++position;
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') break;
  }
  return ordinal;
}

static int compute_index(CUdevice dev) {
  char uuid[96] = "";
  device_uuid(dev, uuid, sizeof(uuid));
  if (g_limits.from_file && file_has_uuids()) {
    int index = file_index_of_uuid(uuid);
    if (index < 0) {
      hook_log(HOOK_LOG_ERROR, "device %d (%s) is not listed in %s: its allocations are refused",
               (int)dev, uuid[0] ? uuid : "UUID unknown", g_limits.source);
    }
    return index;
  }
  nvmlDevice_t device;
  unsigned int nvml_index;
  __typeof__(&nvmlDeviceGetIndex) get_index = REAL(nvmlDeviceGetIndex);
  if (uuid[0] && nvml_by_uuid(uuid, &device) == 0 && get_index &&
      get_index(device, &nvml_index) == NVML_SUCCESS && nvml_index < TESSERA_MAX_DEVICES) {
    return (int)nvml_index;
  }
  int index = index_from_visible_devices((int)dev);
  HOOK_LOG(HOOK_LOG_DEBUG, "device %d: NVML cannot map %s, using index %d", (int)dev, uuid, index);
  return index >= 0 && index < TESSERA_MAX_DEVICES ? index : -1;
}

/* Asks the driver for `dev`'s granularity and caches the answer; 0 when it does not say. */
static uint64_t ask_granularity(CUdevice dev) {
  size_t answer = 0;
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  __typeof__(&cuMemGetAllocationGranularity) get = REAL(cuMemGetAllocationGranularity);
  if (get == NULL || get(&answer, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS) {
    return 0;
  }
  if (answer > 0) __atomic_store_n(&hook_granule_of[dev], (uint64_t)answer, __ATOMIC_RELAXED);
  return answer;
}

int hook_device_index_slow(CUdevice dev) {
  if (dev < 0 || dev >= HOOK_MAX_CUDA_DEVICES) return -1;
  int cached = __atomic_load_n(&hook_index_of[dev], __ATOMIC_ACQUIRE);
  if (cached != 0) return cached == INDEX_NONE ? -1 : cached - 1;
  pthread_mutex_lock(&g_map_mutex);
  if (hook_index_of[dev] == 0) {
    ask_granularity(dev); /* now, not on the first allocation (kept only if the driver says) */
    int index = compute_index(dev);
    if (index >= 0) {
      region_publish_device(index, hook_limit_memory(index),
                            (uint32_t)__atomic_load_n(&g_limits.cores[index], __ATOMIC_RELAXED));
      g_published |= 1u << index;
      HOOK_LOG(HOOK_LOG_INFO, "CUDA device %d is container device %d (memory limit %llu bytes)",
               (int)dev, index, (unsigned long long)hook_limit_memory(index));
    }
    __atomic_store_n(&hook_index_of[dev], index >= 0 ? index + 1 : INDEX_NONE, __ATOMIC_RELEASE);
  }
  int index = hook_index_of[dev] == INDEX_NONE ? -1 : hook_index_of[dev] - 1;
  pthread_mutex_unlock(&g_map_mutex);
  return index;
}

int hook_nvml_device_index(nvmlDevice_t device) {
  if (g_limits.from_file && file_has_uuids()) {
    char uuid[96];
    __typeof__(&nvmlDeviceGetUUID) get_uuid = REAL(nvmlDeviceGetUUID);
    if (get_uuid == NULL || get_uuid(device, uuid, sizeof(uuid)) != NVML_SUCCESS) return -1;
    return file_index_of_uuid(uuid);
  }
  unsigned int index;
  __typeof__(&nvmlDeviceGetIndex) get_index = REAL(nvmlDeviceGetIndex);
  if (get_index == NULL || get_index(device, &index) != NVML_SUCCESS) return -1;
  return index < TESSERA_MAX_DEVICES ? (int)index : -1;
}

int hook_current_device(CUdevice* dev) {
  __typeof__(&cuCtxGetDevice) get = REAL(cuCtxGetDevice);
  return get != NULL && get(dev) == CUDA_SUCCESS ? 0 : -1;
}

static unsigned g_context_generation = 1;
static __thread CUcontext tl_context __attribute__((tls_model("initial-exec")));
static __thread CUdevice tl_device __attribute__((tls_model("initial-exec")));
static __thread unsigned tl_generation __attribute__((tls_model("initial-exec")));

int hook_current_context(CUcontext* ctx, CUdevice* dev) {
  __typeof__(&cuCtxGetCurrent) get = REAL(cuCtxGetCurrent);
  if (get == NULL || get(ctx) != CUDA_SUCCESS || *ctx == NULL) return -1;
  unsigned generation = __atomic_load_n(&g_context_generation, __ATOMIC_ACQUIRE);
  if (*ctx == tl_context && generation == tl_generation) {
    *dev = tl_device;
    return 0;
  }
  if (hook_current_device(dev) != 0) return -1;
  tl_context = *ctx;
  tl_device = *dev;
  tl_generation = generation;
  return 0;
}

void hook_forget_contexts(void) {
  __atomic_add_fetch(&g_context_generation, 1, __ATOMIC_ACQ_REL);
}

unsigned hook_context_generation(void) {
  return __atomic_load_n(&g_context_generation, __ATOMIC_ACQUIRE);
}

void hook_note_context(CUcontext ctx, CUdevice dev, unsigned generation) {
  tl_context = ctx;
  tl_device = dev;
  tl_generation = generation;
}

uint64_t hook_granularity_slow(CUdevice dev) {
  if (dev < 0 || dev >= HOOK_MAX_CUDA_DEVICES) return DEFAULT_GRANULE;
  uint64_t granule = __atomic_load_n(&hook_granule_of[dev], __ATOMIC_RELAXED);
  if (granule != 0) return granule;
  granule = ask_granularity(dev);
  if (granule == 0) {
    granule = DEFAULT_GRANULE;
    __atomic_store_n(&hook_granule_of[dev], granule, __ATOMIC_RELAXED);
  }
  return granule;
}

int hook_nvml_device(CUdevice dev, nvmlDevice_t* device) {
  char uuid[96];
  return device_uuid(dev, uuid, sizeof(uuid)) == 0 ? nvml_by_uuid(uuid, device) : -1;
}
