#include "os.h"

#include "compute.h"

#include <pthread.h>

#include "at_fork.h"
#include "compute_estimates.h"
#include "compute_loop.h"
#include "compute_sampling.h"
#include "fast_clock.h"
#include "log.h"
#include "real.h"
#include "region.h"
#include "state.h"

/* Parameters (docs/compute-limit.md explains each). */
#define CREDIT_NS 10000000ull      /* virtual time a container may fall behind and catch up */
#define LEAD_NS 100000ull          /* how early a launch may queue before its slot */
#define SPREAD_MAX_NS 1000000ull   /* hard: a sleep ends up to 1/8 of it, at most this, early */
#define MAX_WAIT_NS 60000000000ull /* no share makes a launch wait longer: the clock is wrong */
#define CONTENTION_HOLD_NS 500000000ull /* elastic: contended for this long after evidence */
#define EVIDENCE_SHIFT 4                /* inflated spans are counted over about 16 spans */
#define EVIDENCE_RATE 4                 /* 1 in this many inflated makes evidence */
#define MIN_EXCESS_NS 30000ull          /* a span must exceed the cost by this much, and by half */
#define TYPICAL_SHIFT 3                 /* the typical cost moves by 1/8 of each new cost */
#define SETTLE_SAMPLES 16               /* a new key's owed launches are settled at this sample */
#define FIRST_WAIT_NS 20000000ull       /* the most a launch waits for the process's first sample */
#define FIRST_POLL_NS 50000ull          /* how often it looks meanwhile */

enum { STATE_UNKNOWN = 0, STATE_OFF = 1, STATE_ON = 2, STATE_FAILED = 3 };
static int g_state;
/* Set before g_state becomes STATE_ON, so that a launch reads them without a call: per container
 * device the limit and the charge factor 100/P in 32.32 fixed point (rounded up: a charge is never
 * too small), the mode, and the region's per-device records. The mode and the region's mapping
 * never change in a process; the limits and factors change when the limits file does
 * (compute_limits_changed), by atomic stores under g_limits_mutex, and launches read them with
 * atomic loads (plain loads' cost). */
static pthread_mutex_t g_limits_mutex = PTHREAD_MUTEX_INITIALIZER;
static int g_percent[TESSERA_MAX_DEVICES];
static uint64_t g_scale[TESSERA_MAX_DEVICES];
static uint64_t
    g_scale_alone[TESSERA_MAX_DEVICES]; /* elastic, uncontended: 100/ceiling, 0 = free */
static int g_elastic;
static struct tessera_region_device* g_devices;

static inline int percent_of(int index) {
  return __atomic_load_n(&g_percent[index], __ATOMIC_RELAXED);
}
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
  uint64_t last_ns;        /* when the last sample started */
  struct sample_draw draw; /* what it drew for the next (compute_sampling.h) */
  unsigned passed;         /* due launches let pass since (a hint: threads may lose counts) */
  uint64_t draws;          /* samples started, a seed of the draws */
  unsigned inflated;       /* how many recent spans were inflated, in 1/256, decaying */
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

static void compute_reset_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_sampler.mutex = fresh;
  g_limits_mutex = fresh;
  g_sampler.context = NULL; /* the parent's events are not the child's */
  __atomic_store_n(&g_sampler.pending, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_captures, 0, __ATOMIC_RELAXED); /* the child has a driver of its own */
}
HOOK_RESET_IN_CHILD(compute_reset_in_child)

/* The charge factor 100/P in 32.32 fixed point, rounded up (a charge is never too small). */
static uint64_t scale_of(int percent) {
  return ((100ull << 32) + (uint64_t)percent - 1) / (uint64_t)percent;
}

static void poll_round(void);

/* Takes the limits' cores.<i> and ceiling.<i> into the statics a launch reads (g_limits_mutex
 * held). A launch that races a change pays the old factor or the new one. Sets bit i of *changed
 * for each device whose percent changed. Returns whether any device is limited. */
static int take_limits(const struct hook_limits* limits, uint32_t* changed) {
  int limited = 0;
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    int percent = __atomic_load_n(&limits->cores[i], __ATOMIC_RELAXED); /* 0 (none) to 99 */
    int ceiling = __atomic_load_n(&limits->ceiling[i], __ATOMIC_RELAXED);
    __atomic_store_n(&g_scale_alone[i], ceiling > 0 ? scale_of(ceiling) : 0, __ATOMIC_RELAXED);
    if (percent > 0) limited = 1;
    if (percent == percent_of(i)) continue;
    *changed |= 1u << i;
    if (percent > 0) __atomic_store_n(&g_scale[i], scale_of(percent), __ATOMIC_RELAXED);
    __atomic_store_n(&g_percent[i], percent, __ATOMIC_RELEASE);
  }
  return limited;
}

/* The limiter turns on: a slot names this process among the container's for the loop's NVML
 * samples, and starts the reaper thread that polls them. Called without g_limits_mutex: taking a
 * slot looks at the limits file (limits_watch.h), which may call compute_limits_changed. */
static void turn_on(void) {
  region_each_round(poll_round);
  region_slot();
}

/* Runs once, on the first governed call. */
static void decide_state(void) {
  pthread_mutex_lock(&g_limits_mutex);
  int mode = hook_state_init();
  int s = mode == HOOK_FAILED ? STATE_FAILED : STATE_OFF;
  struct tessera_region* region = region_get(); /* mapped when the mode is HOOK_ACTIVE */
  if (mode == HOOK_ACTIVE && region != NULL) {
    const struct hook_limits* limits = hook_limits();
    g_elastic = limits->mode == HOOK_CORE_ELASTIC;
    g_devices = region->devices;
    fast_clock_init();
    uint32_t changed = 0;
    if (take_limits(limits, &changed)) s = STATE_ON;
  }
  __atomic_store_n(&g_state, s, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g_limits_mutex);
  if (s == STATE_ON) turn_on();
}

void compute_limits_changed(void) {
  pthread_mutex_lock(&g_limits_mutex);
  int s = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  if (s != STATE_ON && s != STATE_OFF) {
    /* Not decided yet (decide_state reads the limits as they are now) or failed. */
    pthread_mutex_unlock(&g_limits_mutex);
    return;
  }
  uint32_t changed = 0;
  int limited = take_limits(hook_limits(), &changed);
  /* A limiter once on stays on (a launch on a device without a limit then costs a call and two
   * loads more than with the limiter off): turning it off under launches in flight is not worth
   * those nanoseconds. It turns on only where decide_state found the region. */
  int start = limited && s == STATE_OFF && g_devices != NULL;
  if (start) __atomic_store_n(&g_state, STATE_ON, __ATOMIC_RELEASE);
  for (int i = 0; i < TESSERA_MAX_DEVICES; ++i) {
    if ((changed & (1u << i)) && percent_of(i) > 0) loop_limit_changed(i);
  }
  pthread_mutex_unlock(&g_limits_mutex);
  if (start) turn_on();
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

uint64_t compute_expected_ns(uintptr_t key) {
  return estimate_cost(key);
}

static int contended(int index, uint64_t now) {
  return __atomic_load_n(&g_devices[index].compute_contended_ns, __ATOMIC_RELAXED) > now;
}

/* The charge factor a launch on device `index` pays now: 100/P times the loop's gain
 * (compute_loop.h); for an elastic container, that only while its device is contended, and
 * 100/ceiling (0: nothing) while it is alone. */
static inline uint64_t scale_now(int index, uint64_t now) {
  if (g_elastic && !contended(index, now)) {
    return __atomic_load_n(&g_scale_alone[index], __ATOMIC_RELAXED);
  }
  uint32_t gain = __atomic_load_n(&g_devices[index].compute_gain, __ATOMIC_RELAXED);
  uint64_t scale = __atomic_load_n(&g_scale[index], __ATOMIC_RELAXED);
  return gain == 0 ? scale : (scale * gain) >> 16;
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
  if (__builtin_expect(base <= now + LEAD_NS, 1)) return 0;
  if (base - now > MAX_WAIT_NS) {
    restart_clock(d, base - now, base + add, now + add);
    return 0;
  }
  uint64_t sleep = base - now - LEAD_NS;
  sleep = g_elastic ? sleep : sleep - spread(sleep, now);
  __atomic_fetch_add(&d->compute_waited_ns, sleep, __ATOMIC_RELAXED); /* the loop's anti-windup */
  os_sleep_ns(sleep);
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

/* The loop's reading of device `index` (compute_loop.h, loop_held_fn): NVML showed the device
 * contended or not. Elastic: contention holds the container for the hold time from now. Returns
 * the percent the loop holds the container at: a hard limit always, an elastic one only on a
 * reading that itself shows contention (the spans' evidence can be a kernel's own outliers, and
 * held to its percent on it the loop would raise the charges of a container alone); 0: none. */
static int held_on_reading(int index, int nvml_contended) {
  int percent = state() == STATE_ON ? percent_of(index) : 0;
  if (percent == 0) return 0;
  if (nvml_contended) hold_contended(index, fast_now_ns());
  return !g_elastic || nvml_contended ? percent : 0;
}

static void poll_round(void) {
  loop_poll(held_on_reading);
}

/* Counts a span as inflated or not; a quarter of the last 16 or so inflated is evidence of
 * contention. One inflated span is not: a real kernel's time has rare outliers (simgpu: 1 launch
 * in 256 takes 1.5 to 3 times its time), and two in 200 ms, the rule before, came several times
 * a second at 1,000 spans a second (an elastic container alone was held at its percent). */
static void note_span(int index, int inflated, uint64_t now) {
  unsigned score = g_sampler.inflated;
  score = score - (score >> EVIDENCE_SHIFT) + (inflated ? 256 : 0);
  g_sampler.inflated = score;
  if (score >= (256u << EVIDENCE_SHIFT) / EVIDENCE_RATE) hold_contended(index, now);
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

/* Folds one measured span into the key's estimate (g_sampler.mutex held; estimate_fold: the
 * mean, its trim and the first span's restart). A span well over the estimate counts towards
 * contention evidence (note_span). */
static void learn(uintptr_t key, uint64_t span, int exact, int index, uint64_t now) {
  struct estimate* e = estimate_get(key);
  uint64_t cost = e->cost_ns;
  if (cost != 0) {
    uint64_t excess = cost / 2 > MIN_EXCESS_NS ? cost / 2 : MIN_EXCESS_NS;
    note_span(index, span > cost + excess, now);
  }
  uint32_t samples = e->samples;
  uint64_t next = estimate_fold(cost, &samples, span);
  __atomic_store_n(&e->samples, samples, __ATOMIC_RELAXED);
  __atomic_store_n(&e->cost_ns, next, __ATOMIC_RELEASE);
  if (samples == SETTLE_SAMPLES) settle_owed(e, next, index, os_now_ns());
  uint64_t typical = __atomic_load_n(&g_typical_ns, __ATOMIC_RELAXED);
  typical = typical == 0 ? next : typical - (typical >> TYPICAL_SHIFT) + (next >> TYPICAL_SHIFT);
  __atomic_store_n(&g_typical_ns, typical, __ATOMIC_RELAXED);
  HOOK_LOG(HOOK_LOG_DEBUG, "compute: key %p span %llu ns (%s), expected cost now %llu ns",
           (void*)key, (unsigned long long)span, exact ? "exact" : "corrected",
           (unsigned long long)next);
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
  struct sample_draw draw = sample_draw_next(now ^ ++g_sampler.draws << 40);
  __atomic_store_n(&g_sampler.draw.skips, draw.skips, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler.draw.interval_ns, draw.interval_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler.passed, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler.last_ns, now, __ATOMIC_RELAXED);
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
  if (hook_current_context(&context, &dev) == 0) loop_note_device(index, dev);
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
  /* Charged nothing (nothing is measured yet), it still waits while the container is ahead. */
  if (scale != 0 && charge_and_wait(index, charged, scale, now)) now = fast_now_ns();
  begin_sample(key, stream, ptsz, index, now, l);
}

/* compute_begin with the limiter on. Out of line, so that a process without a limit returns from
 * compute_begin without saving the registers this needs. */
static __attribute__((noinline)) CUresult begin_governed(uintptr_t key, CUstream stream, int ptsz,
                                                         struct compute_launch* l) {
  int index = launch_index();
  if (index < 0 || percent_of(index) == 0) return CUDA_SUCCESS;

  uint64_t now = fast_now_ns();
  struct estimate* e = estimate_lookup(key);
  uint64_t cost = e ? __atomic_load_n(&e->cost_ns, __ATOMIC_ACQUIRE) : 0;
  if (__builtin_expect(cost == 0, 0)) {
    begin_unknown(key, stream, ptsz, index, now, l);
    return CUDA_SUCCESS;
  }
  /* Wait for the budget first, so that a timed span never includes the wait. */
  uint64_t scale = scale_now(index, now);
  if (scale != 0 && charge_and_wait(index, cost, scale, now)) now = fast_now_ns();
  uint64_t since = now - __atomic_load_n(&g_sampler.last_ns, __ATOMIC_RELAXED);
  struct sample_draw draw = {__atomic_load_n(&g_sampler.draw.interval_ns, __ATOMIC_RELAXED), 0};
  if (__builtin_expect(!sample_due(&draw, since), 1)) return CUDA_SUCCESS;
  draw.skips = __atomic_load_n(&g_sampler.draw.skips, __ATOMIC_RELAXED);
  unsigned passed = __atomic_load_n(&g_sampler.passed, __ATOMIC_RELAXED);
  if (!sample_take(&draw, since, passed, __atomic_load_n(&e->samples, __ATOMIC_RELAXED))) {
    __atomic_store_n(&g_sampler.passed, passed + 1, __ATOMIC_RELAXED);
    try_harvest();
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
