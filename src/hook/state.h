/* Process-wide state of libtessera-cuda.so: the limits (read on the first CUDA or NVML hook, never
 * in dlsym or cuGetProcAddress; a later version of the limits file is applied by limits_watch.c),
 * the shared region, and the map from the driver's devices to the container's device indices.
 *
 * Device indices: a limit belongs to a device as the container sees it (NVML's index, or the
 * uuid.<i> of the limits file). A CUDA device is mapped through its UUID, so CUDA_VISIBLE_DEVICES
 * reordering cannot move a limit to another device.
 *
 * Thread-safety: hook_state_init runs once (pthread_once); the other functions are thread-safe.
 * After fork() the child starts with a fresh lock and forgets the parent's contexts (at_fork.h). */
#ifndef TESSERA_HOOK_STATE_H_
#define TESSERA_HOOK_STATE_H_

#include <stdint.h>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "limits.h"

enum hook_mode {
  HOOK_INACTIVE = 0, /* no limit configured: every hook passes straight through */
  HOOK_ACTIVE = 1,   /* limits apply */
  HOOK_FAILED = 2    /* malformed configuration or no region: every CUDA call fails */
};

/* Loads the limits and opens the region on first call; returns the mode. Inline: every hook asks
 * first, and after the first call the answer is one load (no call into pthread_once). */
extern int hook_state_ready __attribute__((visibility("hidden"))); /* the mode + 1; 0 before */
int hook_state_init_once(void);
static inline int hook_state_init(void) {
  int ready = __atomic_load_n(&hook_state_ready, __ATOMIC_ACQUIRE);
  return __builtin_expect(ready != 0, 1) ? ready - 1 : hook_state_init_once();
}

const struct hook_limits* hook_limits(void);

/* The limits a running process may change (memory.<i>, spill.<i>, cores.<i>, ceiling.<i>) are
 * replaced in place by hook_limits_update, with atomic stores: read them with atomic loads, as
 * these do (a plain load's cost). */
static inline uint64_t hook_limit_memory(int index) {
  return __atomic_load_n(&hook_limits()->memory[index], __ATOMIC_RELAXED);
}
static inline uint64_t hook_limit_spill(int index) {
  return __atomic_load_n(&hook_limits()->spill[index], __ATOMIC_RELAXED);
}

/* Takes over next's memory.<i>, spill.<i>, cores.<i> and ceiling.<i> (limits_change_decide said
 * LIMITS_APPLY; nothing else may differ) and shows the new limits in the shared region for the
 * devices this process published. Memory applies from the next charge on; the compute limiter is
 * told by the caller (compute_limits_changed). Serialised by its caller (limits_watch.c). */
void hook_limits_update(const struct hook_limits* next);

/* What the allocation path reads per CUDA device handle (0..HOOK_MAX_CUDA_DEVICES-1), filled once
 * by state.c and read without a lock by the inline functions below: the container index + 1 (0:
 * not mapped yet, negative: not one of the container's devices) and the allocation granularity
 * (0: not asked yet). */
#define HOOK_MAX_CUDA_DEVICES 64
extern int hook_index_of[HOOK_MAX_CUDA_DEVICES] __attribute__((visibility("hidden")));
extern uint64_t hook_granule_of[HOOK_MAX_CUDA_DEVICES] __attribute__((visibility("hidden")));

/* The container index of CUDA device `dev`, or -1 when it is not one of the container's devices
 * (a limits file with UUIDs that do not list it). */
int hook_device_index_slow(CUdevice dev);
static inline int hook_device_index(CUdevice dev) {
  if ((unsigned)dev < HOOK_MAX_CUDA_DEVICES) {
    int cached = __atomic_load_n(&hook_index_of[dev], __ATOMIC_ACQUIRE);
    if (cached > 0) return cached - 1;
  }
  return hook_device_index_slow(dev);
}

/* The container index of NVML device `device`, or -1. */
int hook_nvml_device_index(nvmlDevice_t device);

/* The device of the calling thread's current context; -1 without a context. */
int hook_current_device(CUdevice* dev);

/* The calling thread's current context and its device; -1 without a context. The context's
 * device is cached per thread until hook_forget_contexts (a context was destroyed, so a handle
 * may come back for another device). */
int hook_current_context(CUcontext* ctx, CUdevice* dev);
void hook_forget_contexts(void);

/* Primes the calling thread's cache above with a context it just created or retained, so that
 * its first allocation asks the driver for the current context only (a thread that creates a
 * context usually allocates in it). `generation` is hook_context_generation() read before the
 * driver's call: a context destroyed meanwhile is then not cached. */
unsigned hook_context_generation(void);
void hook_note_context(CUcontext ctx, CUdevice dev, unsigned generation);

/* Allocation granularity of `dev` (asked from the driver once, when the device is first mapped to
 * its index, so that no allocation waits for the question; 2 MiB when the driver does not say). */
uint64_t hook_granularity_slow(CUdevice dev);
static inline uint64_t hook_granularity(CUdevice dev) {
  if ((unsigned)dev < HOOK_MAX_CUDA_DEVICES) {
    uint64_t granule = __atomic_load_n(&hook_granule_of[dev], __ATOMIC_RELAXED);
    if (granule != 0) return granule;
  }
  return hook_granularity_slow(dev);
}

/* Rounds `bytes` up to a multiple of `granule` (saturating). Granularities are powers of two: a
 * mask then, not a 64-bit division. */
static inline uint64_t hook_round_up(uint64_t bytes, uint64_t granule) {
  if (granule == 0) return bytes;
  uint64_t rest = (granule & (granule - 1)) == 0 ? bytes & (granule - 1) : bytes % granule;
  if (rest == 0) return bytes;
  uint64_t up = granule - rest;
  return bytes > UINT64_MAX - up ? UINT64_MAX : bytes + up;
}

/* The NVML handle of CUDA device `dev` (through its UUID); -1 when NVML cannot say. */
int hook_nvml_device(CUdevice dev, nvmlDevice_t* device);

#endif /* TESSERA_HOOK_STATE_H_ */
