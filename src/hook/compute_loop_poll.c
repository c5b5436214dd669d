#include "os.h"

#include "compute_loop.h"

#include <stdlib.h>
#include <unistd.h>

#include "host_pid.h"
#include "log.h"
#include "real.h"
#include "region.h"
#include "state.h"

/* Parameters (docs/compute-limit.md, "Constants"). */
#define POLL_GAP_US 150000ull /* a device is polled at most this often, by one process */
#define LOOKBACK_US ((uint64_t)(LOOP_LOOKBACK_S * 1e6))

/* NVML's handle of each container device, once a launch on it noted it: 0 not yet, 1 known,
 * -1 NVML cannot say. */
static int g_noted[TESSERA_REGION_MAX_DEVICES];
static nvmlDevice_t g_nvml[TESSERA_REGION_MAX_DEVICES];
/* The gains this process saw at each round, whichever process polled. Only the reaper thread
 * touches them. */
static struct loop_history g_history[TESSERA_REGION_MAX_DEVICES];
/* When this process applied the last change of each device's percent (0: none;
 * loop_limit_changed), CLOCK_REALTIME us. */
static uint64_t g_switched_us[TESSERA_REGION_MAX_DEVICES];

/* The samples of `device` stamped after `since_us`, in a malloc'ed array (to be freed); NULL
 * when there are none or NVML cannot say. */
static nvmlProcessUtilizationSample_t* fetch_samples(nvmlDevice_t device, uint64_t since_us,
                                                     unsigned* count) {
  __typeof__(&nvmlDeviceGetProcessUtilization) get = REAL(nvmlDeviceGetProcessUtilization);
  for (int attempt = 0; attempt < 3; ++attempt) {
    unsigned n = 0;
    nvmlReturn_t rc = get(device, NULL, &n, since_us);
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE || n == 0) return NULL; /* NOT_FOUND: none new */
    n += 64;                                                       /* room for new samples */
    nvmlProcessUtilizationSample_t* samples = malloc(n * sizeof(*samples));
    if (samples == NULL) return NULL;
    rc = get(device, samples, &n, since_us);
    if (rc == NVML_SUCCESS && n > 0) {
      *count = n;
      return samples;
    }
    free(samples);
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE) return NULL;
  }
  return NULL;
}

/* The host PIDs of the container's processes (the region's slots) into `hosts`; their number, or
 * -1 when the pids file does not list them all. */
static int container_host_pids(struct tessera_region* r, pid_t* hosts) {
  pid_t own[TESSERA_REGION_MAX_SLOTS];
  int n = 0;
  for (int s = 0; s < TESSERA_REGION_MAX_SLOTS; ++s) {
    pid_t pid = __atomic_load_n(&r->slots[s].pid, __ATOMIC_ACQUIRE);
    if (pid != 0) own[n++] = pid;
  }
  return hook_host_pids(own, n, hosts) < 0 ? -1 : n;
}

static void poll_device(struct tessera_region* r, int index, nvmlDevice_t device,
                        loop_held_fn held) {
  struct tessera_region_device* d = &r->devices[index];
  uint64_t now = os_realtime_us();
  uint64_t last = __atomic_load_n(&d->compute_poll_us, __ATOMIC_RELAXED);
  if (last != 0 && now >= last && now - last < POLL_GAP_US) return;
  if (!__atomic_compare_exchange_n(&d->compute_poll_us, &last, now, 0, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED)) {
    return; /* another process polls this round */
  }
  uint64_t waited = __atomic_load_n(&d->compute_waited_ns, __ATOMIC_RELAXED);
  uint64_t waited_before = __atomic_load_n(&d->compute_poll_waited_ns, __ATOMIC_RELAXED);
  unsigned count = 0;
  nvmlProcessUtilizationSample_t* samples = fetch_samples(device, now - LOOKBACK_US, &count);
  if (samples == NULL) return;           /* nothing ran on the device in the window */
  pid_t hosts[TESSERA_REGION_MAX_SLOTS]; /* with container_host_pids, 8 KiB of 64 KiB of stack */
  int n = container_host_pids(r, hosts);
  struct loop_reading reading = {.held = waited != waited_before};
  uint64_t start = __atomic_load_n(&d->compute_start_us, __ATOMIC_RELAXED);
  int seen = n > 0 && loop_measure(samples, count, now, start,
                                   __atomic_load_n(&g_switched_us[index], __ATOMIC_RELAXED), hosts,
                                   n, &g_history[index], &reading);
  free(samples);
  if (!seen) {
    /* The container did not run, some of its processes have no host PID yet or samples that
     * still cover time before its start, or NVML does not name them as this library does:
     * nothing to hold. */
    return;
  }
  /* NVML saw other processes' work fill the device beside the container's: contention, which
   * an elastic container's spans often cannot show on a time-sliced device (a container that is
   * not held keeps the device for whole slices, and a paced neighbour's kernel runs between two
   * of them without delaying any of its spans). */
  int contended = loop_contended(reading.ours, reading.others);
  int percent = held(index, contended);
  /* A step on news only: a process sampled one instant at a time keeps its sample until it is
   * drawn again (about every 0.5 s at 30% of the device), and each step taken again on it took
   * the same error again. */
  uint64_t stepped = __atomic_load_n(&d->compute_sample_us, __ATOMIC_RELAXED);
  if (reading.newest_us <= stepped ||
      !__atomic_compare_exchange_n(&d->compute_sample_us, &stepped, reading.newest_us, 0,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    return;
  }
  __atomic_store_n(&d->compute_poll_waited_ns, waited, __ATOMIC_RELAXED);
  /* The first reading only starts the steps' clock: it is the least reliable (a container
   * alone at 75% read 65% when NVML samples one process per instant), and steps on it sent first
   * seconds past their bounds there (docs/compute-limit.md). */
  uint64_t moved = __atomic_exchange_n(&d->compute_gain_us, now, __ATOMIC_RELAXED);
  reading.dt_s = moved != 0 && moved < now ? (double)(now - moved) / 1e6 : 0;
  reading.now_us = now;
  struct loop_gains gains = {__atomic_load_n(&d->compute_gain, __ATOMIC_RELAXED),
                             __atomic_load_n(&d->compute_gain_recent, __ATOMIC_RELAXED),
                             __atomic_load_n(&d->compute_gain_streak, __ATOMIC_RELAXED),
                             __atomic_load_n(&d->compute_streak_us, __ATOMIC_RELAXED)};
  uint32_t before = gains.gain;
  loop_step(&gains, percent, &reading);
  __atomic_store_n(&d->compute_gain, gains.gain, __ATOMIC_RELAXED);
  loop_history_note(&g_history[index], now, gains.gain);
  __atomic_store_n(&d->compute_gain_recent, gains.recent, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_gain_streak, gains.streak, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_streak_us, gains.streak_us, __ATOMIC_RELAXED);
  if (gains.gain != before) {
    HOOK_LOG(HOOK_LOG_DEBUG,
             "compute: device %d: NVML saw the container at %.1f%% (others %.1f%%, %s): charges "
             "scaled by %.3f",
             index, reading.ours, reading.others, reading.held ? "held" : "not held",
             (double)gains.gain / LOOP_GAIN_ONE);
  }
}

void loop_note_device(int index, CUdevice dev) {
  if (__atomic_load_n(&g_noted[index], __ATOMIC_ACQUIRE) != 0) return;
  nvmlDevice_t device;
  if (hook_nvml_device(dev, &device) != 0 || REAL(nvmlDeviceGetProcessUtilization) == NULL) {
    HOOK_LOG(HOOK_LOG_DEBUG,
             "compute: no NVML process utilisation for device %d: the charges are "
             "estimates alone",
             index);
    __atomic_store_n(&g_noted[index], -1, __ATOMIC_RELEASE);
    return;
  }
  /* The container's first launch on the device: NVML's samples that cover time before it read
   * its start-up as idle. */
  struct tessera_region* r = region_get();
  uint64_t unset = 0;
  if (r != NULL) {
    __atomic_compare_exchange_n(&r->devices[index].compute_start_us, &unset, os_realtime_us(), 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  }
  g_nvml[index] = device;
  __atomic_store_n(&g_noted[index], 1, __ATOMIC_RELEASE); /* the reaper polls it from now on */
}

void loop_poll(loop_held_fn held) {
  struct tessera_region* r = region_get();
  if (r == NULL) return;
  for (int i = 0; i < TESSERA_REGION_MAX_DEVICES; ++i) {
    if (__atomic_load_n(&g_noted[i], __ATOMIC_ACQUIRE) != 1) continue;
    loop_history_note(&g_history[i], os_realtime_us(),
                      __atomic_load_n(&r->devices[i].compute_gain, __ATOMIC_RELAXED));
    poll_device(r, i, g_nvml[i], held);
  }
}

void loop_limit_changed(int index) {
  __atomic_store_n(&g_switched_us[index], os_realtime_us(), __ATOMIC_RELAXED);
  struct tessera_region* r = region_get();
  if (r == NULL) return;
  __atomic_store_n(&r->devices[index].compute_gain_us, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&r->devices[index].compute_gain_streak, 0, __ATOMIC_RELAXED);
}
