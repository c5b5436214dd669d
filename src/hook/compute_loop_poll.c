#include "os.h"

#include "compute_loop.h"

#include <stdlib.h>
#include <unistd.h>

#include "compute.h"
#include "host_pid.h"
#include "log.h"
#include "real.h"
#include "region.h"
#include "state.h"

/* Parameters (docs/compute-limit.md, "Constants"). */
#define POLL_GAP_US 150000ull /* a device is polled at most this often, by one process */
#define WINDOW_US ((uint64_t)(LOOP_WINDOW_S * 1e6))
#define MAX_PIDS 256 /* distinct processes of one poll taken into account */

/* NVML's handle of each container device, once a launch on it noted it: 0 not yet, 1 known,
 * -1 NVML cannot say. */
static int g_noted[TESSERA_REGION_MAX_DEVICES];
static nvmlDevice_t g_nvml[TESSERA_REGION_MAX_DEVICES];

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

static int listed(const pid_t* hosts, int n, unsigned pid) {
  for (int i = 0; i < n; ++i) {
    if ((unsigned)hosts[i] == pid) return 1;
  }
  return 0;
}

/* One process's samples in the window: their smUtil summed, and how many. */
struct process_share {
  unsigned pid;
  unsigned count;
  uint64_t sum;
};

/* Adds a sample of `pid` to `shares` (n entries, at most MAX_PIDS). */
static void add_sample(struct process_share* shares, int* n, unsigned pid, unsigned util) {
  for (int i = 0; i < *n; ++i) {
    if (shares[i].pid == pid) {
      shares[i].sum += util;
      ++shares[i].count;
      return;
    }
  }
  if (*n == MAX_PIDS) return;
  shares[(*n)++] = (struct process_share){pid, 1, util};
}

/* Each process's share of the last second is the mean of its samples in it: NVML samples each
 * process on its own phase (one sample a period, its percent of that period) or, as an H200
 * does, one process per instant (the percent of its last second); the mean reads both. Their sum
 * over the container's processes (`ours`) and the others' (`others`), in percent. Returns whether
 * NVML showed any of the container's processes. */
static int measure(const nvmlProcessUtilizationSample_t* samples, unsigned count,
                   const pid_t* hosts, int n, double* ours, double* others) {
  struct process_share* shares = malloc(MAX_PIDS * sizeof(*shares)); /* off the reaper's stack */
  if (shares == NULL) return 0;
  int distinct = 0;
  for (unsigned i = 0; i < count; ++i) {
    add_sample(shares, &distinct, samples[i].pid,
               samples[i].smUtil < 100 ? samples[i].smUtil : 100);
  }
  int seen = 0;
  *ours = *others = 0;
  for (int i = 0; i < distinct; ++i) {
    double mean = (double)shares[i].sum / shares[i].count;
    if (listed(hosts, n, shares[i].pid)) {
      *ours += mean;
      seen = 1;
    } else {
      *others += mean;
    }
  }
  free(shares);
  return seen;
}

static void poll_device(struct tessera_region* r, int index, nvmlDevice_t device) {
  struct tessera_region_device* d = &r->devices[index];
  uint64_t now = os_realtime_us();
  uint64_t last = __atomic_load_n(&d->compute_poll_us, __ATOMIC_RELAXED);
  if (last != 0 && now >= last && now - last < POLL_GAP_US) return;
  if (!__atomic_compare_exchange_n(&d->compute_poll_us, &last, now, 0, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED)) {
    return; /* another process polls this round */
  }
  uint64_t waited = __atomic_load_n(&d->compute_waited_ns, __ATOMIC_RELAXED);
  uint64_t waited_before =
      __atomic_exchange_n(&d->compute_poll_waited_ns, waited, __ATOMIC_RELAXED);
  unsigned count = 0;
  nvmlProcessUtilizationSample_t* samples = fetch_samples(device, now - WINDOW_US, &count);
  if (samples == NULL) return;           /* nothing ran on the device in the window */
  pid_t hosts[TESSERA_REGION_MAX_SLOTS]; /* with container_host_pids, 8 KiB of 64 KiB of stack */
  int n = container_host_pids(r, hosts);
  struct loop_reading reading = {.held = waited != waited_before};
  int seen = n > 0 && measure(samples, count, hosts, n, &reading.ours, &reading.others);
  free(samples);
  if (!seen) {
    /* The container did not run, some of its processes have no host PID yet, or NVML does not
     * name them as this library does: nothing to hold. */
    return;
  }
  /* NVML saw other processes' work fill the device beside the container's: contention, which
   * an elastic container's spans often cannot show on a time-sliced device (a container that is
   * not held keeps the device for whole slices, and a paced neighbour's kernel runs between two
   * of them without delaying any of its spans). */
  int contended = loop_contended(reading.ours, reading.others);
  if (contended) compute_mark_contended(index);
  /* The first reading only starts the steps' clock: its samples' periods can begin before the
   * container's first launch, and read as its share they made a hard 75% container alone use
   * 87% of the device in its first second. */
  uint64_t moved = __atomic_exchange_n(&d->compute_gain_us, now, __ATOMIC_RELAXED);
  reading.dt_s = moved != 0 && moved < now ? (double)(now - moved) / 1e6 : 0;
  struct loop_gains gains = {__atomic_load_n(&d->compute_gain, __ATOMIC_RELAXED),
                             __atomic_load_n(&d->compute_gain_recent, __ATOMIC_RELAXED)};
  uint32_t before = gains.gain;
  loop_step(&gains, compute_held_percent(index, contended), &reading);
  __atomic_store_n(&d->compute_gain, gains.gain, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_gain_recent, gains.recent, __ATOMIC_RELAXED);
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
  g_nvml[index] = device;
  __atomic_store_n(&g_noted[index], 1, __ATOMIC_RELEASE);
  /* The container's first launch on the device starts the averages now, not at the next round. */
  struct tessera_region* r = region_get();
  if (r != NULL) poll_device(r, index, device);
}

void loop_poll(void) {
  struct tessera_region* r = region_get();
  if (r == NULL) return;
  for (int i = 0; i < TESSERA_REGION_MAX_DEVICES; ++i) {
    if (__atomic_load_n(&g_noted[i], __ATOMIC_ACQUIRE) == 1) poll_device(r, i, g_nvml[i]);
  }
}
