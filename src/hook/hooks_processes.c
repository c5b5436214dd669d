/* NVML's process lists and per-process utilisation in the container's PID namespace. The driver
 * names processes by their host PIDs, which do not exist inside a container's PID namespace: there
 * nvidia-smi finds no such process in /proc and shows none (HAMi#1339). With the node agent's pids
 * file (abi/host_pids.h) the library answers for the container: its own processes under the PIDs
 * they have in the container, with their memory; other containers' processes, and processes
 * younger than the agent's last refresh, are left out. Without a pids file (no PID namespace, or
 * no agent) the driver's answer passes through unchanged, as does any error of the driver.
 *
 * Each hook asks the driver with a buffer of its own (grown until the driver's list fits), keeps
 * the container's entries and answers the caller's size protocol itself: a caller whose array is
 * too small (or NULL with a count of 0) gets NVML_ERROR_INSUFFICIENT_SIZE and the count it needs.
 */
#include "os.h"

#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "host_pid.h"
#include "real.h"

typedef nvmlReturn_t (*list_fn)(nvmlDevice_t, unsigned int*, void*);
typedef __typeof__(&nvmlDeviceGetProcessUtilization) utilization_fn;

#define FIRST_CAPACITY 64u
#define MAX_CAPACITY 65536u

/* Keeps the entries (of `size` bytes, the PID an unsigned int at offset 0) whose host PID the
 * pids text lists, with their own PIDs; returns how many. */
static unsigned keep_own(const char* pids, unsigned char* entries, unsigned count, size_t size) {
  unsigned kept = 0;
  for (unsigned i = 0; i < count; ++i) {
    unsigned char* e = entries + (size_t)i * size;
    unsigned host;
    memcpy(&host, e, sizeof(host));
    pid_t own = host_pid_own_parse(pids, (pid_t)host);
    if (own <= 0) continue;
    unsigned pid = (unsigned)own;
    memcpy(e, &pid, sizeof(pid));
    if (kept != i) memmove(entries + (size_t)kept * size, e, size);
    ++kept;
  }
  return kept;
}

/* The driver's whole list for `device` in a malloc'ed array (*out, *count); the driver's result. */
static nvmlReturn_t whole_list(list_fn fn, nvmlDevice_t device, size_t size, unsigned char** out,
                               unsigned* count) {
  unsigned capacity = FIRST_CAPACITY;
  for (;;) {
    unsigned char* buffer = malloc((size_t)capacity * size);
    if (buffer == NULL) return NVML_ERROR_MEMORY;
    unsigned n = capacity;
    nvmlReturn_t rc = fn(device, &n, buffer);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE && n > capacity && n <= MAX_CAPACITY) {
      free(buffer);
      capacity = n + FIRST_CAPACITY; /* processes may start meanwhile */
      continue;
    }
    if (rc != NVML_SUCCESS) {
      free(buffer);
      return rc;
    }
    *out = buffer;
    *count = n;
    return NVML_SUCCESS;
  }
}

static nvmlReturn_t own_processes(void* real, nvmlDevice_t device, unsigned int* count, void* infos,
                                  size_t size) {
  list_fn fn = (list_fn)real;
  if (fn == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
  if (tessera_in_hook || count == NULL) return fn(device, count, infos);
  HOOK_SCOPE();
  char* pids = hook_pids_text();
  if (pids == NULL) return fn(device, count, infos);
  unsigned char* all = NULL;
  unsigned n = 0;
  nvmlReturn_t rc = whole_list(fn, device, size, &all, &n);
  if (rc == NVML_SUCCESS) {
    unsigned kept = keep_own(pids, all, n, size);
    if (kept > *count || (infos == NULL && kept > 0)) {
      rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else if (kept > 0) {
      memcpy(infos, all, (size_t)kept * size);
    }
    *count = kept;
  }
  free(all);
  free(pids);
  return rc;
}

/* One hook per exported name family, so that each binds its own real functions (procaddr.c). */
#define OWN_PROCESSES(hook, type)                                                        \
  nvmlReturn_t hook(void* real, nvmlDevice_t device, unsigned int* count, type* infos) { \
    return own_processes(real, device, count, infos, sizeof(*infos));                    \
  }
OWN_PROCESSES(hook_nvml_processes_v1, nvmlProcessInfo_v1_t)
OWN_PROCESSES(hook_nvml_compute_processes, nvmlProcessInfo_t)
OWN_PROCESSES(hook_nvml_graphics_processes, nvmlProcessInfo_t)
OWN_PROCESSES(hook_nvml_mps_processes, nvmlProcessInfo_t)

nvmlReturn_t hook_nvml_process_utilization(void* real, nvmlDevice_t device,
                                           nvmlProcessUtilizationSample_t* samples,
                                           unsigned int* count, unsigned long long last_seen) {
  utilization_fn fn = (utilization_fn)real;
  if (fn == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
  if (tessera_in_hook || count == NULL || samples == NULL) {
    return fn(device, samples, count, last_seen); /* a size query, or the driver's error */
  }
  HOOK_SCOPE();
  char* pids = hook_pids_text();
  nvmlReturn_t rc = fn(device, samples, count, last_seen);
  if (pids != NULL && rc == NVML_SUCCESS) {
    *count = keep_own(pids, (unsigned char*)samples, *count, sizeof(*samples));
  }
  free(pids);
  return rc;
}

#define PROCESS_HOOK(name, hook, type)                                                   \
  HOOK_EXPORT nvmlReturn_t name(nvmlDevice_t device, unsigned int* count, type* infos) { \
    return hook(real_fn(REAL_##name), device, count, infos);                             \
  }

#undef nvmlDeviceGetComputeRunningProcesses
#undef nvmlDeviceGetGraphicsRunningProcesses
#undef nvmlDeviceGetMPSComputeRunningProcesses
PROCESS_HOOK(nvmlDeviceGetComputeRunningProcesses, hook_nvml_processes_v1, nvmlProcessInfo_v1_t)
PROCESS_HOOK(nvmlDeviceGetComputeRunningProcesses_v2, hook_nvml_compute_processes,
             nvmlProcessInfo_t)
PROCESS_HOOK(nvmlDeviceGetComputeRunningProcesses_v3, hook_nvml_compute_processes,
             nvmlProcessInfo_t)
PROCESS_HOOK(nvmlDeviceGetGraphicsRunningProcesses, hook_nvml_processes_v1, nvmlProcessInfo_v1_t)
PROCESS_HOOK(nvmlDeviceGetGraphicsRunningProcesses_v2, hook_nvml_graphics_processes,
             nvmlProcessInfo_t)
PROCESS_HOOK(nvmlDeviceGetGraphicsRunningProcesses_v3, hook_nvml_graphics_processes,
             nvmlProcessInfo_t)
PROCESS_HOOK(nvmlDeviceGetMPSComputeRunningProcesses, hook_nvml_processes_v1, nvmlProcessInfo_v1_t)
PROCESS_HOOK(nvmlDeviceGetMPSComputeRunningProcesses_v2, hook_nvml_mps_processes, nvmlProcessInfo_t)
PROCESS_HOOK(nvmlDeviceGetMPSComputeRunningProcesses_v3, hook_nvml_mps_processes, nvmlProcessInfo_t)

HOOK_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                         nvmlProcessUtilizationSample_t* samples,
                                                         unsigned int* count,
                                                         unsigned long long last_seen) {
  return hook_nvml_process_utilization(real_fn(REAL_nvmlDeviceGetProcessUtilization), device,
                                       samples, count, last_seen);
}
