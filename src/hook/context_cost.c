#include "os.h"

#include "context_cost.h"

#include <unistd.h>

#include "host_pid.h"
#include "log.h"
#include "real.h"
#include "region.h"
#include "state.h"

#define MAX_PROCESSES 512

uint64_t context_cost_hint(int index) {
  struct tessera_region* r = region_get();
  return r ? __atomic_load_n(&r->devices[index].context_bytes, __ATOMIC_RELAXED) : 0;
}

/* Lowers the recorded cost to `bytes`, or records it when there is none: the smallest honest
 * measurement is the closest (a measurement can only be inflated, by others' allocations). */
static void record_cost(int index, uint64_t bytes) {
  struct tessera_region* r = region_get();
  if (r == NULL || bytes == 0) return;
  uint64_t* slot = &r->devices[index].context_bytes;
  uint64_t seen = __atomic_load_n(slot, __ATOMIC_RELAXED);
  while ((seen == 0 || bytes < seen) &&
         !__atomic_compare_exchange_n(slot, &seen, bytes, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* This process's charge of device `index` in the region. */
static uint64_t own_charge(int index) {
  struct tessera_region* r = region_get();
  int slot = region_slot();
  return r && slot >= 0 ? __atomic_load_n(&r->slots[slot].used_bytes[index], __ATOMIC_ACQUIRE) : 0;
}

/* `after - before` of a counter that other threads move both ways, never below 0. */
static uint64_t growth(uint64_t before, uint64_t after) {
  return after > before ? after - before : 0;
}

/* NVML's memory of process `pid` on `device`: 1 and *used when listed, 0 when not, -1 when NVML
 * cannot say. */
static int process_memory(nvmlDevice_t device, pid_t pid, uint64_t* used) {
  __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) list =
      REAL(nvmlDeviceGetComputeRunningProcesses_v3);
  if (list == NULL) list = REAL(nvmlDeviceGetComputeRunningProcesses_v2);
  if (list == NULL) return -1;
  nvmlProcessInfo_t infos[MAX_PROCESSES];
  unsigned int count = MAX_PROCESSES;
  if (list(device, &count, infos) != NVML_SUCCESS) return -1;
  for (unsigned int i = 0; i < count; ++i) {
    if ((pid_t)infos[i].pid == pid) {
      /* NVML_VALUE_NOT_AVAILABLE (all ones) without the right to see it */
      if (infos[i].usedGpuMemory == ~0ull) return -1;
      *used = infos[i].usedGpuMemory;
      return 1;
    }
  }
  return 0;
}

static int free_memory(nvmlDevice_t device, uint64_t* free_bytes) {
  __typeof__(&nvmlDeviceGetMemoryInfo) info = REAL(nvmlDeviceGetMemoryInfo);
  nvmlMemory_t memory;
  if (info == NULL || info(device, &memory) != NVML_SUCCESS) return -1;
  *free_bytes = memory.free;
  return 0;
}

void context_probe_begin(struct context_probe* probe, CUdevice dev, int index) {
  *probe = (struct context_probe){.index = index};
  probe->have_device = hook_nvml_device(dev, &probe->device) == 0;
  if (!probe->have_device) return;
  pid_t host = hook_host_pid();
  probe->pid = host > 0 ? host : getpid(); /* no pids file: most likely no PID namespace */
  int listed = process_memory(probe->device, probe->pid, &probe->own_before);
  probe->own_known = listed >= 0;
  if (listed == 0) probe->own_before = 0;
  probe->own_charge_before = own_charge(index);
  probe->container_before = region_used(index);
  probe->free_known = free_memory(probe->device, &probe->free_before) == 0;
}

int context_probe_end(const struct context_probe* probe, uint64_t* cost) {
  if (!probe->have_device) return -1;
  uint64_t own_after = 0;
  /* Listed now that it has a context: NVML knows this process by `pid`. */
  if (probe->own_known && process_memory(probe->device, probe->pid, &own_after) == 1) {
    uint64_t threads = growth(probe->own_charge_before, own_charge(probe->index));
    uint64_t taken = growth(probe->own_before, own_after);
    *cost = taken > threads ? taken - threads : 0; /* less this process's other threads' */
    HOOK_LOG(HOOK_LOG_DEBUG, "a context on device %d: %llu bytes by NVML's count of PID %d",
             probe->index, (unsigned long long)*cost, (int)probe->pid);
    record_cost(probe->index, *cost);
    return 0;
  }
  uint64_t free_after = 0;
  if (!probe->free_known || free_memory(probe->device, &free_after) != 0) return -1;
  uint64_t taken = growth(free_after, probe->free_before); /* the fall of free memory */
  uint64_t neighbours = growth(probe->container_before, region_used(probe->index));
  *cost = taken > neighbours ? taken - neighbours : 0; /* less the container's other charges */
  HOOK_LOG(HOOK_LOG_DEBUG, "a context on device %d: %llu bytes by the device's free memory",
           probe->index, (unsigned long long)*cost);
  record_cost(probe->index, *cost);
  return 0;
}
