/* The compute limiter's expected costs: per key (a kernel at one launch shape, or a graph exec)
 * the device time a launch is expected to take, learnt from samples by compute.c. A fixed
 * ESTIMATE_WAYS-way set-associative table: memory stays bounded whatever the number of keys, and an
 * evicted key is learnt again like a new one; a key not measured yet is charged a provisional
 * cost and its launches counted as owed until compute.c settles them.
 *
 * Thread-safety: lookups are lock-free (a racing eviction can make one launch read the previous
 * key's cost: one charge off by one kernel); inserts and owed counts take one process-local
 * mutex; cost_ns and samples are written by compute.c's sampler under its mutex. After fork() the
 * child starts with a fresh lock (at_fork.h). */
#ifndef TESSERA_HOOK_COMPUTE_ESTIMATES_H_
#define TESSERA_HOOK_COMPUTE_ESTIMATES_H_

#include <stdint.h>

#define ESTIMATE_WAYS 4
#define ESTIMATE_SETS 1024 /* power of two */

#define MEAN_FIRST 8  /* a key's first spans: their plain mean */
#define MEAN_SHIFT 3  /* then a span moves the estimate by 1/8 of the difference */
#define TRIM_HALVES 3 /* a span counts for at most this many halves of the estimate */
#define RESTART 3     /* while the mean is plain, a span this many times under it restarts it */

struct estimate {
  uintptr_t key;          /* 0: free */
  uint64_t cost_ns;       /* the mean of its spans (compute.c, learn); 0: not measured yet */
  uint32_t samples;       /* spans taken (saturating) */
  uint32_t owed_launches; /* launches charged a provisional cost */
  uint64_t owed_ns;       /* what they were charged */
};

extern struct estimate g_estimates[ESTIMATE_SETS * ESTIMATE_WAYS];

static inline struct estimate* estimate_set(uintptr_t key) {
  uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
  return &g_estimates[(h >> 40) % ESTIMATE_SETS * ESTIMATE_WAYS];
}

/* The entry of `key`, or NULL. */
struct estimate* estimate_find(uintptr_t key);

/* The entry of `key`, or NULL; a key is almost always in its set's first way. */
static inline struct estimate* estimate_lookup(uintptr_t key) {
  struct estimate* e = estimate_set(key);
  if (__builtin_expect(__atomic_load_n(&e->key, __ATOMIC_ACQUIRE) != key, 0)) {
    e = estimate_find(key);
  }
  return e;
}

/* The cost expected for `key` (0 = not measured). */
static inline uint64_t estimate_cost(uintptr_t key) {
  struct estimate* e = estimate_lookup(key);
  return e ? __atomic_load_n(&e->cost_ns, __ATOMIC_ACQUIRE) : 0;
}

/* The estimate `cost` (0: none yet) after one more span of `span` ns; `samples` counts the spans
 * taken and is updated. The plain mean of the first MEAN_FIRST spans, then a moving mean that
 * weighs each span 1/2^MEAN_SHIFT; a span counts for at most TRIM_HALVES/2 of the estimate; while
 * the mean is plain, a span under 1/RESTART of it restarts it (docs/compute-limit.md, "The
 * estimate follows the mean"). Never returns 0. Pure.
 *
 *   uint32_t n = e->samples;
 *   e->cost_ns = estimate_fold(e->cost_ns, &n, span);
 *   e->samples = n; */
uint64_t estimate_fold(uint64_t cost, uint32_t* samples, uint64_t span);

/* The entry of `key`, inserted (evicting another key of its set) when missing. */
struct estimate* estimate_get(uintptr_t key);

/* A launch of `key`, not measured yet, was charged `charged_ns`: counted as owed. */
void estimate_owe(uintptr_t key, uint64_t charged_ns);

/* Takes what `e` owes (the launches and what they were charged) and clears it. */
void estimate_take_owed(struct estimate* e, uint64_t* launches, uint64_t* charged_ns);

#endif /* TESSERA_HOOK_COMPUTE_ESTIMATES_H_ */
