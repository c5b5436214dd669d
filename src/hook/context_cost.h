/* What creating a context costs in device memory, measured around the driver's call.
 *
 * The measure must not see other processes' allocations made meanwhile: a context created while
 * the container's other processes allocate would otherwise be charged their memory, and fail with
 * CUDA_ERROR_OUT_OF_MEMORY under a limit it fits in. So, in order of preference:
 *   1. NVML's memory of this process (by host PID, see host_pid.h) before and after: exact;
 *   2. the device's free memory before and after, less what the container's own processes charged
 *      meanwhile (the shared region): exact unless another container allocates at the same time.
 * The first context of a container records its cost in the region, and later creations reserve
 * that much before the call (a context larger than the room left fails before it is created).
 *
 * Thread-safety: thread-safe. */
#ifndef TESSERA_HOOK_CONTEXT_COST_H_
#define TESSERA_HOOK_CONTEXT_COST_H_

#include <stdint.h>
#include <sys/types.h>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"

struct context_probe {
  int index;       /* container index of the device */
  int have_device; /* `device` is valid */
  nvmlDevice_t device;
  pid_t pid;           /* this process as NVML names it */
  uint64_t own_before; /* NVML's memory of `pid` before the call (0 when not listed) */
  int own_known;       /* own_before is valid */
  uint64_t free_before;
  int free_known;
  uint64_t own_charge_before; /* this process's charge of the device in the region */
  uint64_t container_before;  /* the container's charge of the device in the region */
};

/* Device memory one context costs on container device `index`, as recorded, or 0. */
uint64_t context_cost_hint(int index);

/* Takes the "before" readings for a context about to be created on `dev` (container index
 * `index`). */
void context_probe_begin(struct context_probe* probe, CUdevice dev, int index);

/* What the context created since context_probe_begin costs: 0 and *cost set, or -1 when it cannot
 * be measured. Records the cost as the container's hint when none is recorded or it is smaller. */
int context_probe_end(const struct context_probe* probe, uint64_t* cost);

#endif /* TESSERA_HOOK_CONTEXT_COST_H_ */
