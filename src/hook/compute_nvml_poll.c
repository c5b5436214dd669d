#include "os.h"

#include "compute_correction.h"

#include <stdlib.h>
#include <unistd.h>

#include "compute.h"
#include "host_pid.h"
#include "log.h"
#include "real.h"
#include "region.h"
#include "state.h"

/* Parameters (docs/compute-limit.md explains each). */
#define POLL_GAP_US 150000ull /* a device is polled at most this often, by one process */
#define STALE_US 2000000ull   /* longer without a poll (nobody launched): start over */

/* NVML's handle of each container device, once a launch on it noted it: 0 not yet, 1 known,
 * -1 NVML cannot say. */
static int g_noted[TESSERA_REGION_MAX_DEVICES];
static nvmlDevice_t g_nvml[TESSERA_REGION_MAX_DEVICES];

/* No correction, and the sums start again with the sample period in progress. */
static void restart(struct tessera_region_device* d, uint64_t now_us, uint64_t newest_stamp,
                    uint64_t estimated) {
  if (newest_stamp != 0 && newest_stamp <= now_us) {
    /* The period in progress began at the newest stamp, and the container launched nothing
     * since (this is its first launch, or the first after 2 s without one): the counter's value
     * then is its value now, and the first period NVML reports is comparable as a whole. */
    __atomic_store_n(&d->compute_seen_us, newest_stamp, __ATOMIC_RELAXED);
    __atomic_store_n(&d->compute_seen_estimated_ns, estimated, __ATOMIC_RELAXED);
  } else {
    /* No sample yet (nothing ran on the device): the first period's start is unknown, and its
     * end only marks where comparable periods begin. */
    __atomic_store_n(&d->compute_seen_us, now_us, __ATOMIC_RELAXED);
    __atomic_store_n(&d->compute_seen_estimated_ns, CORRECTION_UNALIGNED, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&d->compute_used_avg_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_estimated_avg_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_wall_avg_us, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_correction, 0, __ATOMIC_RELAXED);
}

/* The samples of `device` newer than `seen_us`, sorted by stamp, in a malloc'ed array (to be
 * freed); NULL when there are none or NVML cannot say. */
static nvmlProcessUtilizationSample_t* fetch_samples(nvmlDevice_t device, uint64_t seen_us,
                                                     unsigned* count) {
  __typeof__(&nvmlDeviceGetProcessUtilization) get = REAL(nvmlDeviceGetProcessUtilization);
  for (int attempt = 0; attempt < 3; ++attempt) {
    unsigned n = 0;
    nvmlReturn_t rc = get(device, NULL, &n, seen_us);
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE || n == 0) return NULL; /* NOT_FOUND: none new */
    n += 64;                                                       /* room for a new period */
    nvmlProcessUtilizationSample_t* samples = malloc(n * sizeof(*samples));
    if (samples == NULL) return NULL;
    rc = get(device, samples, &n, seen_us);
    if (rc == NVML_SUCCESS) {
      /* Insertion sort: NVML returns them nearly in order, and a poll sees a few periods. */
      for (unsigned i = 1; i < n; ++i) {
        nvmlProcessUtilizationSample_t s = samples[i];
        unsigned j = i;
        for (; j > 0 && samples[j - 1].timeStamp > s.timeStamp; --j) samples[j] = samples[j - 1];
        samples[j] = s;
      }
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

static void poll_device(struct tessera_region* r, int index, nvmlDevice_t device) {
  struct tessera_region_device* d = &r->devices[index];
  uint64_t now = os_realtime_us();
  uint64_t last = __atomic_load_n(&d->compute_poll_us, __ATOMIC_RELAXED);
  if (last != 0 && now >= last && now - last < POLL_GAP_US) return;
  if (!__atomic_compare_exchange_n(&d->compute_poll_us, &last, now, 0, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED)) {
    return; /* another process polls this round */
  }
  uint64_t estimated = __atomic_load_n(&d->compute_estimated_ns, __ATOMIC_RELAXED);
  uint64_t last_estimated =
      __atomic_exchange_n(&d->compute_poll_estimated_ns, estimated, __ATOMIC_RELAXED);
  uint64_t seen = __atomic_load_n(&d->compute_seen_us, __ATOMIC_RELAXED);
  if (last == 0 || now < last || now - last > STALE_US || seen == 0 || seen > now) {
    unsigned count = 0;
    nvmlProcessUtilizationSample_t* samples = fetch_samples(device, 0, &count);
    restart(d, now, samples != NULL ? samples[count - 1].timeStamp : 0, estimated);
    free(samples);
    return;
  }
  unsigned count = 0;
  nvmlProcessUtilizationSample_t* samples = fetch_samples(device, seen, &count);
  if (samples == NULL) return; /* no sample period ended since the last poll */

  pid_t hosts[TESSERA_REGION_MAX_SLOTS]; /* with container_host_pids, 8 KiB of 64 KiB of stack */
  int n = container_host_pids(r, hosts);
  /* Each sample is one PID's percent of the period that ends at its stamp; the period starts at
   * the previous stamp (the first one at the last stamp taken into account). */
  uint64_t used = 0, previous = seen;
  int ours = 0, contended = 0;
  for (unsigned i = 0; i < count;) {
    uint64_t stamp = samples[i].timeStamp;
    unsigned percent = 0, others = 0;
    for (; i < count && samples[i].timeStamp == stamp; ++i) {
      unsigned util = samples[i].smUtil < 100 ? samples[i].smUtil : 100;
      if (n > 0 && listed(hosts, n, samples[i].pid)) {
        percent += util;
        ours = 1;
      } else {
        others += util;
      }
    }
    used += (uint64_t)percent * (stamp - previous) * 10; /* percent of us -> ns */
    previous = stamp;
    contended |= correction_period_contended(percent, others);
  }
  free(samples);
  /* NVML saw other processes' work fill the device beside the container's: contention, even when
   * the spans cannot show it. They often cannot on a time-sliced device: a container that is not
   * held keeps the device for whole slices, and a paced neighbour's kernel runs between two of
   * them without delaying any of its spans. Taken at once, whether or not the periods can be
   * compared yet: waiting for the correction's first comparable period (0.7 s) left an elastic
   * 30% container free beside a 70% one for that long (45% of the device in the first second). */
  if (contended) compute_mark_contended(index);
  /* The expected device time up to the newest stamp, interpolated between the two polls. */
  uint64_t at = last_estimated;
  if (previous > last && estimated > last_estimated) {
    at += (uint64_t)((double)(estimated - last_estimated) * (double)(previous - last) /
                     (double)(now - last));
  }
  uint64_t seen_estimated = __atomic_load_n(&d->compute_seen_estimated_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_seen_us, previous, __ATOMIC_RELAXED);
  if (seen_estimated == CORRECTION_UNALIGNED) {
    /* The first period seen began before the restart, maybe before the container's first
     * launch (and held its first burst): from its end on, periods are whole and comparable. */
    __atomic_store_n(&d->compute_seen_estimated_ns, at, __ATOMIC_RELAXED);
    return;
  }
  uint64_t expected = at > seen_estimated ? at - seen_estimated : 0;
  __atomic_store_n(&d->compute_seen_estimated_ns, at > seen_estimated ? at : seen_estimated,
                   __ATOMIC_RELAXED);
  if (n < 0 || (!ours && expected > 0)) {
    /* Some of the container's processes have no host PID yet, or NVML does not name them as
     * this library does: what NVML saw cannot be compared. */
    HOOK_LOG(HOOK_LOG_DEBUG,
             "compute: NVML's samples of device %d do not show the container's "
             "processes; the correction is left as it is",
             index);
    return;
  }
  uint64_t used_avg = __atomic_load_n(&d->compute_used_avg_ns, __ATOMIC_RELAXED);
  uint64_t estimated_avg = __atomic_load_n(&d->compute_estimated_avg_ns, __ATOMIC_RELAXED);
  uint32_t c = correction_update(used, expected, &used_avg, &estimated_avg);
  /* Halved with the sums above (the covered periods are under a minute: 32 bits of us). */
  uint64_t wall_avg =
      __atomic_load_n(&d->compute_wall_avg_us, __ATOMIC_RELAXED) / 2 + (previous - seen);
  if (wall_avg > UINT32_MAX) wall_avg = UINT32_MAX;
  c = correction_cap(c, used_avg, wall_avg, compute_hard_percent(index));
  __atomic_store_n(&d->compute_used_avg_ns, used_avg, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_estimated_avg_ns, estimated_avg, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_wall_avg_us, (uint32_t)wall_avg, __ATOMIC_RELAXED);
  uint32_t before = __atomic_exchange_n(&d->compute_correction, c, __ATOMIC_RELAXED);
  if (before != c) {
    HOOK_LOG(HOOK_LOG_DEBUG,
             "compute: device %d used %llu us of device time where %llu us were expected; "
             "charges scaled by %.3f",
             index, (unsigned long long)(used_avg / 1000),
             (unsigned long long)(estimated_avg / 1000), c == 0 ? 1.0 : (double)c / CORRECTION_ONE);
  }
}

void correction_note_device(int index, CUdevice dev) {
  if (__atomic_load_n(&g_noted[index], __ATOMIC_ACQUIRE) != 0) return;
  nvmlDevice_t device;
  if (hook_nvml_device(dev, &device) != 0 || REAL(nvmlDeviceGetProcessUtilization) == NULL) {
    HOOK_LOG(HOOK_LOG_DEBUG,
             "compute: no NVML process utilisation for device %d: estimates "
             "are not corrected",
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

void correction_poll(void) {
  struct tessera_region* r = region_get();
  if (r == NULL) return;
  for (int i = 0; i < TESSERA_REGION_MAX_DEVICES; ++i) {
    if (__atomic_load_n(&g_noted[i], __ATOMIC_ACQUIRE) == 1) poll_device(r, i, g_nvml[i]);
  }
}
