#include "os.h"

#include "compute.h"

#include <pthread.h>

#include "compute_correction.h"
#include "compute_estimates.h"
#include "fast_clock.h"
#include "log.h"
#include "real.h"
#include "region.h"
#include "state.h"

/* Parameters (docs/compute-limit.md explains each). */
#define SAMPLE_INTERVAL_NS 1000000ull /* at most one timed launch per process per ms */
#define BACK_TO_BACK_NS 50000ull      /* a launch this soon after the last one is preferred */
#define SAMPLE_OVERDUE_NS 4000000ull  /* then any launch is timed */
#define SAMPLE_FAIR_SKIPS 8           /* the key sampled last yields this many due launches */
#define YOUNG_SAMPLES 4               /* a key timed fewer times is timed at its next due launch */
#define CREDIT_NS 10000000ull         /* virtual time a container may fall behind and catch up */
#define LEAD_NS 100000ull             /* hard: how early a launch may queue before its slot */
#define SPREAD_MAX_NS 1000000ull      /* hard: a sleep ends up to 1/8 of it, at most this, early */
#define MAX_WAIT_NS 60000000000ull    /* no share makes a launch wait longer: the clock is wrong */
#define WINDOW_SAMPLES 64             /* the estimate is the minimum over this many samples */
#define CONTENTION_HOLD_NS 500000000ull /* elastic: contended for this long after evidence */
#define EVIDENCE_SPAN_NS 200000000ull   /* two inflated samples this close make evidence */
#define MIN_EXCESS_NS 30000ull          /* a span must exceed the cost by this much, and by half */
#define TYPICAL_SHIFT 3                 /* the typical cost moves by 1/8 of each new cost */
#define SETTLE_SAMPLES 16               /* a new key's owed launches are settled at this sample */
#define FIRST_WAIT_NS 20000000ull       /* the most a launch waits for the process's first sample */
#define FIRST_POLL_NS 50000ull          /* how often it looks meanwhile */
#define SHARE_WINDOW_NS 50000000ull     /* expected device time over which a key's part is taken */

enum { STATE_UNKNOWN = 0, STATE_OFF = 1, STATE_ON = 2, STATE_FAILED = 3 };
static int g_state;
/* Set once before g_state becomes STATE_ON (the limits and the region's mapping never change in a
 * process), so that a launch reads them without a call: per container device the limit and the
 * charge factor 100/P in 32.32 fixed point (rounded up: a charge is never too small), the mode, and
 * the region's per-device records. */
static int g_percent[TESSERA_MAX_DEVICES];
static uint64_t g_scale[TESSERA_MAX_DEVICES];
static uint64_t
    g_scale_alone[TESSERA_MAX_DEVICES]; /* elastic, uncontended: 100/ceiling, 0 = free */
static int g_elastic;
static struct tessera_region_device* g_devices;
/* When the process sees exactly one CUDA device (the usual container), every launch is on it:
 * its container index, found once, spares the launch path a context lookup. INDEX_UNKNOWN until
 * the first governed launch, INDEX_MANY with several devices. */
#define INDEX_UNKNOWN (-2)
#define INDEX_MANY (-3)
static int g_single_index = INDEX_UNKNOWN;

/* What a launch of a key not measured yet is charged: a moving average of the process's
 * measured costs (0 before the first). settle_owed corrects it at the key's 16th sample. */
static uint64_t g_typical_ns;

/* The one timed launch a process has in flight. */
static struct {
  pthread_mutex_t mutex;
  CUcontext context; /* the events belong to it */
  CUdevice device;   /* its device */
  CUevent start, end;
  int pending; /* the end event is recorded and not harvested yet */
  uintptr_t key;
  uint64_t gap_ns; /* host time from the start record's return to the launch call */
  int exact;       /* the stream was busy at the start record: the span is the kernel's own */
  int index;
  uint64_t last_ns;     /* when the last sample started */
  uint64_t launch_ns;   /* when the process last launched (any thread; a hint, not exact) */
  uintptr_t launch_key; /* what it launched then (a hint too) */
  int back_to_back;     /* the next sample waits for a launch right behind another */
  int fair_skips;       /* due launches of the key sampled last refused since (a hint) */
  uintptr_t young_key;  /* a young key not timed at its last launch: due launches leave it free */
  int young_skips;      /* due launches that left it free since (a hint) */
  uint64_t evidence_ns; /* when the last inflated sample was seen */
} g_sampler = {.mutex = PTHREAD_MUTEX_INITIALIZER};

/* Stream captures active in the process (compute_capture_begun). */
static int g_captures;

static inline int capture_active(void) {
  return __atomic_load_n(&g_captures, __ATOMIC_ACQUIRE) != 0;
}

void compute_capture_begun(void) {
  __atomic_fetch_add(&g_captures, 1, __ATOMIC_ACQ_REL);
  /* A sample that began before is finished before the capture begins. */
  pthread_mutex_lock(&g_sampler.mutex);
  pthread_mutex_unlock(&g_sampler.mutex);
}

void compute_capture_ended(void) {
  __atomic_fetch_sub(&g_captures, 1, __ATOMIC_ACQ_REL);
}

/* The container index of the launch's device, or -1 when it has none (no context, a device
 * the container does not list). */
static int launch_index(void) {
  int single = __atomic_load_n(&g_single_index, __ATOMIC_ACQUIRE);
  if (__builtin_expect(single >= -1, 1)) return single;
  CUcontext context;
  CUdevice dev;
  if (single == INDEX_UNKNOWN) {
    int count = 0;
    __typeof__(&cuDeviceGetCount) get_count = REAL(cuDeviceGetCount);
    if (get_count != NULL && get_count(&count) == CUDA_SUCCESS && count == 1) {
      int index = hook_device_index(0);
      __atomic_store_n(&g_single_index, index, __ATOMIC_RELEASE);
      return index;
    }
    if (count > 1) __atomic_store_n(&g_single_index, INDEX_MANY, __ATOMIC_RELEASE);
  }
  if (hook_current_context(&context, &dev) != 0) return -1;
  return hook_device_index(dev);
}

void compute_reset_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_sampler.mutex = fresh;
  g_sampler.context = NULL; /* the parent's events are not the child's */
  __atomic_store_n(&g_sampler.pending, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler.young_key, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_captures, 0, __ATOMIC_RELAXED); /* the child has a driver of its own */
  estimates_reset_in_child();
  fast_clock_reset_in_child();
}

/* The charge factor 100/P in 32.32 fixed point, rounded up (a charge is never too small). */
static uint64_t scale_of(int percent) {
  return ((100ull << 32) + (uint64_t)percent - 1) / (uint64_t)percent;
}

/* Runs once, on the first governed call. */
static void decide_state(void) {
  int mode = hook_state_init();
  int s = mode == HOOK_FAILED ? STATE_FAILED : STATE_OFF;
  struct tessera_region* region = region_get(); /* mapped when the mode is HOOK_ACTIVE */
  if (mode == HOOK_ACTIVE && region != NULL) {
    const struct hook_limits* limits = hook_limits();
    for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
      int percent = limits->cores[i]; /* 0 (no limit) to 99 */
      if (percent <= 0) continue;
      g_percent[i] = percent;
      g_scale[i] = scale_of(percent);
      if (limits->ceiling[i] > 0) g_scale_alone[i] = scale_of(limits->ceiling[i]);
      s = STATE_ON;
    }
    g_elastic = limits->mode == HOOK_CORE_ELASTIC;
    g_devices = region->devices;
    fast_clock_init();
    if (s == STATE_ON) {
      /* A slot names this process among the container's for the correction's NVML samples, and
       * starts the reaper thread that polls them. */
      region_each_round(correction_poll);
      region_slot();
    }
  }
  __atomic_store_n(&g_state, s, __ATOMIC_RELEASE);
}

static __attribute__((noinline)) int first_state(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, decide_state);
  return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
}

static inline int state(void) {
  int s = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  return __builtin_expect(s != STATE_UNKNOWN, 1) ? s : first_state();
}

int compute_hard_percent(int index) {
  return state() == STATE_ON && !g_elastic ? g_percent[index] : 0;
}

uint64_t compute_expected_ns(uintptr_t key) {
  return estimate_cost(key);
}

static int contended(int index, uint64_t now) {
  return __atomic_load_n(&g_devices[index].compute_contended_ns, __ATOMIC_RELAXED) > now;
}

/* The charge factor a launch on device `index` pays now: 100/P times the correction of the
 * estimates by NVML's samples (compute_correction.h); for an elastic container, that only while
 * its device is contended, and 100/ceiling (0: nothing) while it is alone. A hard container's
 * correction is capped where NVML would see it above its percent (correction_cap). */
static inline uint64_t scale_now(int index, uint64_t now) {
  if (g_elastic && !contended(index, now)) return g_scale_alone[index];
  uint32_t c = __atomic_load_n(&g_devices[index].compute_correction, __ATOMIC_RELAXED);
  return c == 0 ? g_scale[index] : (g_scale[index] * c) >> 16;
}

/* Counts `cost` as expected device time on device `index`, which the correction compares with
 * what NVML saw. */
static inline void count_expected(int index, uint64_t cost) {
  __atomic_fetch_add(&g_devices[index].compute_estimated_ns, cost, __ATOMIC_RELAXED);
}

/* The virtual clock is further ahead than any share can put it (a region whose boot was not
 * recorded, written to, or of another machine): it restarts from now rather than make the launch
 * sleep for that long. Logged once per process. */
__attribute__((noinline, cold)) static void restart_clock(struct tessera_region_device* d,
                                                          uint64_t ahead, uint64_t expected,
                                                          uint64_t fresh) {
  static int logged;
  __atomic_compare_exchange_n(&d->compute_tat_ns, &expected, fresh, 0, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED)) {
    hook_log(HOOK_LOG_WARN,
             "compute: the container's device-time clock was %llu s ahead of now, longer than "
             "any launch waits: restarted it from now",
             (unsigned long long)(ahead / 1000000000ull));
  }
}

/* A hard container's sleep of `sleep` ns ends early by a pseudo-random part of it (up to 1/8,
 * at most SPREAD_MAX_NS), drawn from `now`: the launch queues that much before its slot, as LEAD
 * lets it, and is charged the same. Slept exactly, a launch paced at a multiple of a time-sliced
 * neighbour's slice arrives at the same point of the neighbour's slice every time: each span
 * then holds the same wait for the slice, and the estimate stayed inflated until NVML's samples
 * corrected it (a 20 us kernel first timed at 1.8 ms, charged 6 ms a launch at 30%, three 2 ms
 * slices: its hard 30% container got 15.6% and 24.6% of the device in its first second in 2
 * runs of 64). */
static inline uint64_t spread(uint64_t sleep, uint64_t now) {
  uint64_t most = sleep / 8 < SPREAD_MAX_NS ? sleep / 8 : SPREAD_MAX_NS;
  uint64_t draw = (now * 0x9E3779B97F4A7C15ull) >> 32; /* 32 bits, mixed from every bit of now */
  return (draw * most) >> 32;
}

/* Charges `cost` ns of device time to device `index` and sleeps until the container's share
 * allows the launch: the region's virtual clock advances by cost * `scale` (100 / P) per launch,
 * and a launch may start once the clock, before its own charge, is not ahead of now. Returns
 * whether it slept (`now` is then stale). */
static inline int charge_and_wait(int index, uint64_t cost, uint64_t scale, uint64_t now) {
  struct tessera_region_device* d = &g_devices[index];
  uint64_t add = (uint64_t)(((unsigned __int128)cost * scale) >> 32);
  uint64_t old = __atomic_load_n(&d->compute_tat_ns, __ATOMIC_RELAXED);
  uint64_t base;
  do {
    base = old + CREDIT_NS < now ? now - CREDIT_NS : old;
  } while (!__atomic_compare_exchange_n(&d->compute_tat_ns, &old, base + add, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  uint64_t lead = g_elastic ? 0 : LEAD_NS;
  if (__builtin_expect(base <= now + lead, 1)) return 0;
  if (base - now > MAX_WAIT_NS) {
    restart_clock(d, base - now, base + add, now + add);
    return 0;
  }
  uint64_t sleep = base - now - lead;
  os_sleep_ns(g_elastic ? sleep : sleep - spread(sleep, now));
  return 1;
}

static void hold_contended(int index, uint64_t now) {
  struct tessera_region_device* d = &g_devices[index];
  uint64_t until = now + CONTENTION_HOLD_NS;
  uint64_t old = __atomic_load_n(&d->compute_contended_ns, __ATOMIC_RELAXED);
  while (old < until && !__atomic_compare_exchange_n(&d->compute_contended_ns, &old, until, 1,
                                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

void compute_mark_contended(int index) {
  if (state() == STATE_ON && g_percent[index] != 0) hold_contended(index, fast_now_ns());
}

static void note_evidence(int index, uint64_t now) {
  if (g_sampler.evidence_ns != 0 && now - g_sampler.evidence_ns <= EVIDENCE_SPAN_NS) {
    hold_contended(index, now);
  }
  g_sampler.evidence_ns = now;
}

static uint64_t min_nonzero(uint64_t a, uint64_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return a < b ? a : b;
}

/* A key's launches before its first measurement were charged the typical cost: once a few samples
 * have brought its estimate down to its own time (a first span, on an idle stream, also holds
 * whatever other contexts had queued), each is corrected to `cost` on the container's clock. An
 * overcharge is given back only while the clock is ahead of the credit floor, where it still holds
 * launches back. */
static void settle_owed(struct estimate* e, uint64_t cost, int index, uint64_t now) {
  uint64_t launches, charged;
  estimate_take_owed(e, &launches, &charged);
  uint64_t scale = scale_now(index, now);
  if (launches == 0 || scale == 0) return;
  uint64_t owed = launches * cost;
  struct tessera_region_device* d = &g_devices[index];
  if (owed > charged) count_expected(index, owed - charged);
  uint64_t diff = owed > charged ? owed - charged : charged - owed;
  uint64_t add = (uint64_t)(((unsigned __int128)diff * scale) >> 32);
  uint64_t old = __atomic_load_n(&d->compute_tat_ns, __ATOMIC_RELAXED);
  uint64_t next;
  do {
    uint64_t floor = now > CREDIT_NS ? now - CREDIT_NS : 0;
    uint64_t base = old > floor ? old : floor;
    if (owed > charged) {
      next = base + add;
    } else {
      next = old > floor + add ? old - add : (old > floor ? floor : old);
    }
  } while (!__atomic_compare_exchange_n(&d->compute_tat_ns, &old, next, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
}

/* The key's part of the container's expected device time on device `index` over its last one or
 * two windows of SHARE_WINDOW_NS (g_sampler.mutex held). A move of its estimate changes the
 * container's expected time by that part of the move, and the correction is scaled by as much:
 * scaled by the whole move, a 1 us kernel's estimate rising to 2 us halved the charge of the
 * 4 ms kernels launched beside it. */
static double key_share(struct estimate* e, int index) {
  uint64_t device = __atomic_load_n(&g_devices[index].compute_estimated_ns, __ATOMIC_RELAXED);
  uint64_t launched = __atomic_load_n(&e->launched_ns, __ATOMIC_RELAXED);
  if (e->next_device_ns == 0) { /* its first sample: both windows start now */
    e->mark_launched_ns = e->next_launched_ns = launched;
    e->mark_device_ns = e->next_device_ns = device;
  } else if (device - e->next_device_ns >= SHARE_WINDOW_NS) {
    e->mark_launched_ns = e->next_launched_ns;
    e->mark_device_ns = e->next_device_ns;
    e->next_launched_ns = launched;
    e->next_device_ns = device;
  }
  uint64_t all = device - e->mark_device_ns;
  if (all == 0) return 1.0;
  double share = (double)(launched - e->mark_launched_ns) / (double)all;
  return share < 1.0 ? share : 1.0;
}

/* Folds one measured span into the key's estimate (g_sampler.mutex held). */
static void learn(uintptr_t key, uint64_t span, int exact, int index, uint64_t now) {
  struct estimate* e = estimate_get(key);
  if (span == 0) span = 1; /* a kernel that takes no measurable time is still a known one */
  uint64_t cost = e->cost_ns;
  if (cost != 0) {
    uint64_t excess = cost / 2 > MIN_EXCESS_NS ? cost / 2 : MIN_EXCESS_NS;
    if (span > cost + excess) note_evidence(index, now);
  }
  /* Every span is an upper bound of the kernel's own time (other work or host delays only add
   * to it): a lower one is taken at once, and the window's minimum lets the estimate rise when
   * the kernel really got longer, at most twofold a window. A window whose spans were all
   * inflated by a neighbour is not taken for a longer kernel at once: a kernel launched right
   * after each budget wait can find the neighbour's kernel ahead of it on the device every time
   * for a window or two (a 1 us kernel rose to 1.46 ms, and its hard 70% container got 61%). A
   * kernel that got k times longer is followed within log2(k) windows. */
  e->window_min_ns = min_nonzero(e->window_min_ns, span);
  if (e->samples < YOUNG_SAMPLES) __atomic_store_n(&e->samples, e->samples + 1, __ATOMIC_RELAXED);
  uint64_t before = cost;
  if (cost == 0 || span < cost) cost = span;
  if (++e->window_count >= WINDOW_SAMPLES) {
    cost = min_nonzero(e->window_min_ns, 2 * cost); /* neither is 0 here */
    e->window_min_ns = 0;
    e->window_count = 0;
  }
  __atomic_store_n(&e->cost_ns, cost, __ATOMIC_RELEASE);
  if (e->window_count == SETTLE_SAMPLES) settle_owed(e, cost, index, os_now_ns());
  uint64_t typical = __atomic_load_n(&g_typical_ns, __ATOMIC_RELAXED);
  typical = typical == 0 ? cost : typical - (typical >> TYPICAL_SHIFT) + (cost >> TYPICAL_SHIFT);
  __atomic_store_n(&g_typical_ns, typical, __ATOMIC_RELAXED);
  double share = key_share(e, index);
  if (before != 0 && cost != before) {
    correction_estimate_changed(&g_devices[index], before, cost, share);
  }
  HOOK_LOG(HOOK_LOG_DEBUG, "compute: key %p span %llu ns (%s), expected cost now %llu ns",
           (void*)key, (unsigned long long)span, exact ? "exact" : "corrected",
           (unsigned long long)cost);
}

/* Reads the in-flight sample if its end event completed (g_sampler.mutex held). Never waits: the
 * kernel may be waiting for work not launched yet. */
static void harvest_locked(void) {
  if (!g_sampler.pending) return;
  CUresult q = REAL(cuEventQuery)(g_sampler.end);
  if (q == CUDA_ERROR_NOT_READY) return;
  __atomic_store_n(&g_sampler.pending, 0, __ATOMIC_RELAXED);
  float ms = 0;
  if (q != CUDA_SUCCESS ||
      REAL(cuEventElapsedTime)(&ms, g_sampler.start, g_sampler.end) != CUDA_SUCCESS || ms < 0) {
    return;
  }
  uint64_t span = (uint64_t)((double)ms * 1e6);
  if (!g_sampler.exact) span = span > g_sampler.gap_ns ? span - g_sampler.gap_ns : 0;
  learn(g_sampler.key, span, g_sampler.exact, g_sampler.index, os_now_ns());
}

static int capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  __typeof__(&cuStreamIsCapturing) is_capturing = REAL(cuStreamIsCapturing);
  if (is_capturing == NULL) return 0;
  CUresult rc = is_capturing(stream, &status);
  return rc != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Starts timing the launch (g_sampler.mutex held; released by compute_end or on failure). */
static int start_sample(struct compute_launch* l, CUcontext context, uint64_t now) {
  if (g_sampler.pending || capturing(l->stream)) return 0;
  if (g_sampler.context != context) {
    if (g_sampler.context != NULL) {
      REAL(cuEventDestroy_v2)(g_sampler.start);
      REAL(cuEventDestroy_v2)(g_sampler.end);
      g_sampler.context = NULL;
    }
    __typeof__(&cuCtxGetDevice) get_device = REAL(cuCtxGetDevice);
    if (get_device == NULL || get_device(&g_sampler.device) != CUDA_SUCCESS) return 0;
    if (REAL(cuEventCreate)(&g_sampler.start, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return 0;
    if (REAL(cuEventCreate)(&g_sampler.end, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      REAL(cuEventDestroy_v2)(g_sampler.start);
      return 0;
    }
    g_sampler.context = context;
  }
  /* Asked before the record: asked after, a stream whose work ends in between looked idle, and
   * the host time subtracted from the span (up to the moment the work ended) made it shorter
   * than the kernel (a 20 us kernel estimated at 7 us, 53% used at a 50% limit). Busy when
   * asked, the span is taken whole: an upper bound even if the work ends before the launch. */
  __typeof__(&cuStreamQuery) query = REAL(cuStreamQuery);
  g_sampler.exact = query != NULL && query(l->stream) == CUDA_ERROR_NOT_READY;
  if (REAL(cuEventRecord)(g_sampler.start, l->stream) != CUDA_SUCCESS) return 0;
  l->host_ns = os_now_ns(); /* the start event's time is at most this */
  __atomic_store_n(&g_sampler.key, l->key, __ATOMIC_RELAXED);
  g_sampler.index = l->index;
  __atomic_store_n(&g_sampler.last_ns, now, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler.back_to_back, !g_sampler.back_to_back, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler.fair_skips, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler.young_key, 0, __ATOMIC_RELAXED);
  l->timed = 1;
  return 1;
}

/* The slow part of compute_begin: a sample is due (or the cost is unknown). Times the launch
 * when the process has no sample in flight and the stream is not being captured. */
static __attribute__((noinline)) void begin_sample(uintptr_t key, CUstream stream, int ptsz,
                                                   int index, uint64_t now,
                                                   struct compute_launch* l) {
  if (capture_active() || pthread_mutex_trylock(&g_sampler.mutex) != 0) return;
  if (capture_active()) { /* one began since: its thread may be capturing now */
    pthread_mutex_unlock(&g_sampler.mutex);
    return;
  }
  harvest_locked();
  l->index = index;
  l->key = key;
  l->stream = stream == NULL && ptsz ? CU_STREAM_PER_THREAD : stream;
  CUcontext context = NULL;
  CUdevice dev;
  if (hook_current_context(&context, &dev) == 0) correction_note_device(index, dev);
  __typeof__(&cuCtxGetCurrent) get_current = REAL(cuCtxGetCurrent);
  if (get_current == NULL || get_current(&context) != CUDA_SUCCESS || context == NULL ||
      !start_sample(l, context, now)) {
    pthread_mutex_unlock(&g_sampler.mutex);
    return;
  }
  /* The kernel cannot start before the driver is called: a span that began on an idle stream is
   * corrected by the host time from the start record to this moment, which leaves it an upper
   * bound of the kernel's own time. */
  l->call_ns = os_now_ns();
}

/* Reads the in-flight sample if it is done and nobody holds the sampler; starts none. */
static void try_harvest(void) {
  if (capture_active() || pthread_mutex_trylock(&g_sampler.mutex) != 0) return;
  if (!capture_active()) harvest_locked();
  pthread_mutex_unlock(&g_sampler.mutex);
}

/* While the process has measured nothing, its launches wait for its first sample, for at most
 * FIRST_WAIT_NS: launched unpaced, the first kernels of several processes queue behind one
 * another, and every first span (so every first estimate and charge) includes that queue. The
 * bound keeps a kernel that waits for a later one from holding the process up for good. */
static void await_first_sample(void) {
  uint64_t started = __atomic_load_n(&g_sampler.last_ns, __ATOMIC_RELAXED);
  while (!capture_active() && __atomic_load_n(&g_typical_ns, __ATOMIC_RELAXED) == 0 &&
         __atomic_load_n(&g_sampler.pending, __ATOMIC_RELAXED) &&
         os_now_ns() - started < FIRST_WAIT_NS) {
    try_harvest();
    if (__atomic_load_n(&g_sampler.pending, __ATOMIC_RELAXED)) os_sleep_ns(FIRST_POLL_NS);
  }
}

/* A launch of a key not measured yet: charged the typical cost, which settle_owed corrects once
 * the key has enough samples, and timed when the sampler is free. It never waits for its kernel,
 * which may wait for work not launched yet (another GPU's kernel, a flag the host sets later). */
static __attribute__((noinline)) void begin_unknown(uintptr_t key, CUstream stream, int ptsz,
                                                    int index, uint64_t now,
                                                    struct compute_launch* l) {
  if (key == 0) return; /* no function: the driver refuses the launch */
  if (capture_active() && capturing(stream == NULL && ptsz ? CU_STREAM_PER_THREAD : stream)) {
    return; /* captured into a graph: it does not run now */
  }
  if (__atomic_load_n(&g_typical_ns, __ATOMIC_RELAXED) == 0) {
    await_first_sample();
    now = fast_now_ns();
  }
  uint64_t cost = __atomic_load_n(&g_typical_ns, __ATOMIC_RELAXED);
  uint64_t scale = scale_now(index, now);
  uint64_t charged = scale == 0 ? 0 : cost;
  estimate_owe(key, charged);
  count_expected(index, charged);
  /* Charged nothing (nothing is measured yet), it still waits while the container is ahead. */
  if (scale != 0 && charge_and_wait(index, charged, scale, now)) now = fast_now_ns();
  __atomic_store_n(&g_sampler.launch_ns, now, __ATOMIC_RELAXED);
  begin_sample(key, stream, ptsz, index, now, l);
}

/* Whether an estimate rests on fewer than YOUNG_SAMPLES samples. */
static int young(const struct estimate* e) {
  return __atomic_load_n(&e->samples, __ATOMIC_RELAXED) < YOUNG_SAMPLES;
}

/* A launch of a young key: timed when it is due and the sampler is free. Otherwise the key has
 * the next due launches of other keys leave the sampler free (begin_governed), so that its own
 * next launch, due by then, is timed. The launch that takes a due sample is most often the one
 * right after a budget wait: a key launched just before the wait (the one whose inflated estimate
 * makes the wait) was never due when launched. Time-sliced, `grid_1000ns` at one wave, first
 * timed at 2 ms across the neighbour's slice, kept that estimate for half a second and its hard
 * 30% container got 1.2% of the device until NVML's samples corrected it (16-18% in the first
 * second, 3 runs of 8). */
static __attribute__((noinline)) void begin_young(uintptr_t key, CUstream stream, int ptsz,
                                                  int index, uint64_t now, int due,
                                                  struct compute_launch* l) {
  if (due) {
    begin_sample(key, stream, ptsz, index, now, l);
    if (l->timed) return;
  }
  __atomic_store_n(&g_sampler.young_key, key, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler.young_skips, 0, __ATOMIC_RELAXED);
}

/* compute_begin with the limiter on. Out of line, so that a process without a limit returns from
 * compute_begin without saving the registers this needs. */
static __attribute__((noinline)) CUresult begin_governed(uintptr_t key, CUstream stream, int ptsz,
                                                         struct compute_launch* l) {
  int index = launch_index();
  if (index < 0 || g_percent[index] == 0) return CUDA_SUCCESS;

  uint64_t now = fast_now_ns();
  struct estimate* e = estimate_lookup(key);
  uint64_t cost = e ? __atomic_load_n(&e->cost_ns, __ATOMIC_ACQUIRE) : 0;
  if (__builtin_expect(cost == 0, 0)) {
    begin_unknown(key, stream, ptsz, index, now, l);
    return CUDA_SUCCESS;
  }
  /* Wait for the budget first, so that a timed span never includes the wait. A plain add (the
   * key's threads may lose one another's): it only weighs the key's estimate moves. */
  __atomic_store_n(&e->launched_ns, __atomic_load_n(&e->launched_ns, __ATOMIC_RELAXED) + cost,
                   __ATOMIC_RELAXED);
  count_expected(index, cost);
  uint64_t scale = scale_now(index, now);
  if (scale != 0 && charge_and_wait(index, cost, scale, now)) now = fast_now_ns();
  uint64_t previous = __atomic_load_n(&g_sampler.launch_ns, __ATOMIC_RELAXED);
  uintptr_t previous_key = __atomic_load_n(&g_sampler.launch_key, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler.launch_ns, now, __ATOMIC_RELAXED); /* plain moves, no lock */
  __atomic_store_n(&g_sampler.launch_key, key, __ATOMIC_RELAXED);
  uint64_t since = now - __atomic_load_n(&g_sampler.last_ns, __ATOMIC_RELAXED);
  int due = since >= SAMPLE_INTERVAL_NS;
  /* A key timed fewer than YOUNG_SAMPLES times is timed at its next due launch that finds the
   * sampler free, whatever the rules below say: its first span, taken at once, holds whatever other
   * contexts had queued (a 39 us kernel first timed at 544 us). Under those rules a key launched
   * only right after a budget wait (the one its own inflated estimate makes) or behind a sample
   * still in flight was timed again only after 400 samples of the others, and its hard 30%
   * container got 9.5% of the device in its first second. */
  if (__builtin_expect(young(e), 0)) {
    begin_young(key, stream, ptsz, index, now, due, l);
    return CUDA_SUCCESS;
  }
  if (__builtin_expect(!due, 1)) return CUDA_SUCCESS;
  /* A young key was not timed at its last launch: the due launches of other keys read the
   * sample in flight and start none, for at most SAMPLE_FAIR_SKIPS of them (the key may not come
   * back), so that the young key's next launch finds a sample due and the sampler free. */
  uintptr_t waiting = __atomic_load_n(&g_sampler.young_key, __ATOMIC_RELAXED);
  if (waiting != 0 && waiting != key) {
    int skips = __atomic_load_n(&g_sampler.young_skips, __ATOMIC_RELAXED);
    if (skips < SAMPLE_FAIR_SKIPS) {
      __atomic_store_n(&g_sampler.young_skips, skips + 1, __ATOMIC_RELAXED);
      try_harvest();
      return CUDA_SUCCESS;
    }
    __atomic_store_n(&g_sampler.young_key, 0, __ATOMIC_RELAXED);
  }
  /* Keys launched in turn share the samples: the key sampled last yields its due launches to
   * another key's. Otherwise a loop whose budget wait always ends before the same key (the one
   * after its longest kernel) times that key alone, and the others keep their first, inflated
   * estimates (a 4 ms kernel charged at 6.9 ms: 17% for a hard 30% container beside a 70% one).
   * The yield is bounded in launches, not time: bounded by 50 ms, it ran out in every turn of a
   * loop whose turn the inflated estimate itself made longer than that (a 4 ms kernel first
   * timed at 20 ms behind the neighbour's queue, charged 66 ms a turn at 30%), and the estimate
   * stayed there for good (6.6% of the device for a hard 30% container). */
  if (key == __atomic_load_n(&g_sampler.key, __ATOMIC_RELAXED) && previous_key != key) {
    int skips = __atomic_load_n(&g_sampler.fair_skips, __ATOMIC_RELAXED);
    if (skips < SAMPLE_FAIR_SKIPS) {
      __atomic_store_n(&g_sampler.fair_skips, skips + 1, __ATOMIC_RELAXED);
      return CUDA_SUCCESS;
    }
  }
  /* Every other sample waits for a launch right behind the process's last one: other contexts'
   * work can hardly have been queued in between, so its span is the kernel's own. The first
   * launch after a pause (a synchronisation) queues behind all that other contexts launched
   * meanwhile; timing only those, as a plain interval does in a loop that synchronises every few
   * launches, keeps every estimate inflated. The samples in between take the next launch,
   * whatever it follows: theirs are the spans that show contention. */
  if (__atomic_load_n(&g_sampler.back_to_back, __ATOMIC_RELAXED) &&
      now - previous > BACK_TO_BACK_NS && since < SAMPLE_OVERDUE_NS) {
    return CUDA_SUCCESS;
  }
  begin_sample(key, stream, ptsz, index, now, l);
  return CUDA_SUCCESS;
}

void compute_context_ending(CUcontext context, CUdevice device, int whole_device, int destroy) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != STATE_ON) return;
  pthread_mutex_lock(&g_sampler.mutex);
  if (g_sampler.context != NULL &&
      (whole_device ? g_sampler.device == device : g_sampler.context == context)) {
    if (destroy) {
      REAL(cuEventDestroy_v2)(g_sampler.start);
      REAL(cuEventDestroy_v2)(g_sampler.end);
    }
    g_sampler.context = NULL;
    __atomic_store_n(&g_sampler.pending, 0, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&g_sampler.mutex);
}

CUresult compute_begin(uintptr_t key, CUstream stream, int ptsz, struct compute_launch* l) {
  l->timed = 0;
  int s = state();
  if (__builtin_expect(s == STATE_OFF, 1)) return CUDA_SUCCESS;
  if (s == STATE_FAILED) return CUDA_ERROR_NOT_INITIALIZED;
  return begin_governed(key, stream, ptsz, l);
}

CUresult compute_end_timed(struct compute_launch* l, CUresult rc) {
  if (rc == CUDA_SUCCESS && REAL(cuEventRecord)(g_sampler.end, l->stream) == CUDA_SUCCESS) {
    g_sampler.gap_ns = l->call_ns - l->host_ns;
    __atomic_store_n(&g_sampler.pending, 1, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&g_sampler.mutex);
  return rc;
}
