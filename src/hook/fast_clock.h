/* CLOCK_MONOTONIC for the compute limiter's launch path, cheaper than clock_gettime where the CPU
 * allows it. On x86-64 with the kernel's clocksource "tsc", a reading is the time-stamp counter
 * scaled from an anchor at most FAST_CLOCK_ANCHOR_NS old: within a few microseconds of
 * clock_gettime, and it may step back by as much across a new anchor. Until the counter's rate is
 * measured (the first millisecond), and on every other system, a reading is clock_gettime. Why:
 * docs/compute-limit.md, "Launch path cost".
 *
 *   uint64_t now = fast_now_ns();
 *
 * Thread-safety: all functions are thread-safe; after fork() the child re-anchors (at_fork.h). */
#ifndef TESSERA_HOOK_FAST_CLOCK_H_
#define TESSERA_HOOK_FAST_CLOCK_H_

#include <stdint.h>

#define FAST_CLOCK_ANCHOR_NS 1000000ull /* a reading is re-anchored once its anchor is this old */

/* The anchor, written under a sequence count (odd while it is being written). */
struct fast_clock_anchor {
  uint32_t seq;
  int writer;    /* taken by the one thread that re-anchors */
  uint64_t tsc;  /* counter ... */
  uint64_t ns;   /* ... and CLOCK_MONOTONIC read together (0: no anchor yet) */
  uint64_t mult; /* ns per counter tick, 32.32 fixed point (0: rate not measured yet) */
  uint64_t span; /* ticks in FAST_CLOCK_ANCHOR_NS: older readings re-anchor */
};
extern struct fast_clock_anchor fast_clock_anchor __attribute__((visibility("hidden")));
extern int fast_clock_counter __attribute__((visibility("hidden"))); /* 1: the counter is used */

/* Decides once whether the counter is used (reads the kernel's clocksource from sysfs). */
void fast_clock_init(void);

/* Whether readings come from the counter (after fast_clock_init). */
int fast_clock_uses_counter(void);

/* A reading through clock_gettime, re-anchoring when the counter is used. */
uint64_t fast_clock_slow(void);

/* Forgets the anchor (registered to run after fork(); tests call it for a fresh start). */
void fast_clock_reset_in_child(void);

/* CLOCK_MONOTONIC in nanoseconds, as above. */
static inline uint64_t fast_now_ns(void) {
#if defined(__x86_64__)
  if (__builtin_expect(__atomic_load_n(&fast_clock_counter, __ATOMIC_RELAXED) == 1, 1)) {
    struct fast_clock_anchor* a = &fast_clock_anchor;
    uint32_t seq = __atomic_load_n(&a->seq, __ATOMIC_ACQUIRE);
    uint64_t tsc = __builtin_ia32_rdtsc();
    uint64_t ticks = tsc - __atomic_load_n(&a->tsc, __ATOMIC_RELAXED);
    uint64_t ns = __atomic_load_n(&a->ns, __ATOMIC_RELAXED);
    uint64_t mult = __atomic_load_n(&a->mult, __ATOMIC_RELAXED);
    uint64_t span = __atomic_load_n(&a->span, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    /* `ticks < span` also refuses a counter behind the anchor (the difference wraps) and an
     * anchor without a rate (span 0); ticks * mult < 2^53 then. */
    if (__builtin_expect(
            (seq & 1) == 0 && ticks < span && seq == __atomic_load_n(&a->seq, __ATOMIC_RELAXED),
            1)) {
      return ns + ((ticks * mult) >> 32);
    }
  }
#endif
  return fast_clock_slow();
}

#endif /* TESSERA_HOOK_FAST_CLOCK_H_ */
