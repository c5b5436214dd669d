/* Process-wide state of libtessera-cuda.so: the limits (read once, on the first CUDA or NVML
 * hook, never in dlsym or cuGetProcAddress), the shared region, and the map from the driver's
 * devices to the container's device indices.
 *
 * Device indices: a limit belongs to a device as the container sees it (NVML's index, or the
 * uuid.<i> of the limits file). A CUDA device is mapped through its UUID, so CUDA_VISIBLE_DEVICES
 * reordering cannot move a limit to another device.
 *
 * Thread-safety: hook_state_init runs once (pthread_once); the other functions are thread-safe.
 * fork() is handled by a pthread_atfork child handler. */
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

/* Loads the limits and opens the region on first call; returns the mode. */
int hook_state_init(void);

const struct hook_limits* hook_limits(void);

/* The container index of CUDA device `dev`, or -1 when it is not one of the container's devices
 * (a limits file with UUIDs that do not list it). */
int hook_device_index(CUdevice dev);

/* The container index of NVML device `device`, or -1. */
int hook_nvml_device_index(nvmlDevice_t device);

/* The device of the calling thread's current context; -1 without a context. */
int hook_current_device(CUdevice* dev);

/* The calling thread's current context and its device; -1 without a context. The context's
 * device is cached per thread until hook_forget_contexts (a context was destroyed, so a handle
 * may come back for another device). */
int hook_current_context(CUcontext* ctx, CUdevice* dev);
void hook_forget_contexts(void);

/* Allocation granularity of `dev` (asked from the driver once; 2 MiB when it does not say). */
uint64_t hook_granularity(CUdevice dev);

/* Rounds `bytes` up to a multiple of `granule` (saturating). */
uint64_t hook_round_up(uint64_t bytes, uint64_t granule);

/* The NVML handle of CUDA device `dev` (through its UUID); -1 when NVML cannot say. */
int hook_nvml_device(CUdevice dev, nvmlDevice_t* device);

#endif /* TESSERA_HOOK_STATE_H_ */
