/* Which launch the compute limiter times (compute.c): a pure choice, table-tested.
 *
 * A process times at most one launch at a time, about once a millisecond. Which launch must not
 * follow the application's loop: timed at a fixed interval, a loop whose budget wait always ends
 * before the same kernel had that kernel timed alone, and the others kept their first estimates.
 * So each sample draws when the next is due (an interval of 1/2 to 3/2 of the mean) and how many
 * due launches it lets pass first (0 to SAMPLE_SKIPS_MAX - 1): the timed launch falls anywhere in
 * the loop. A key with fewer than SAMPLE_YOUNG spans is timed at its first due launch (its first
 * estimate rests on a span or two), and a sample overdue by SAMPLE_OVERDUE_NS takes any launch.
 *
 * Thread-safety: pure functions. */
#ifndef TESSERA_HOOK_COMPUTE_SAMPLING_H_
#define TESSERA_HOOK_COMPUTE_SAMPLING_H_

#include <stdint.h>

#define SAMPLE_INTERVAL_NS 1000000ull /* the mean time between two samples of a process */
#define SAMPLE_SKIPS_MAX 8            /* a sample lets 0 to 7 due launches pass */
#define SAMPLE_OVERDUE_NS 4000000ull  /* then it takes the next launch whatever was drawn */
#define SAMPLE_YOUNG 4                /* a key with fewer spans is timed at its first due launch */

/* What a sample drew when it started, for the next one. */
struct sample_draw {
  uint64_t interval_ns; /* the next sample is due this long after this one started */
  unsigned skips;       /* due launches it lets pass */
};

/* The draw for the sample that starts with `seed` (any bits: the start time, a counter). */
struct sample_draw sample_draw_next(uint64_t seed);

/* Whether a launch is timed: `since_ns` after the last sample started, after `passed` due
 * launches were let pass, its key holding `spans` spans. */
int sample_take(const struct sample_draw* draw, uint64_t since_ns, unsigned passed, uint32_t spans);

/* Whether a launch `since_ns` after the last sample started is due at all (the fast path's
 * test: nothing else is read before it says yes). */
static inline int sample_due(const struct sample_draw* draw, uint64_t since_ns) {
  return since_ns >= draw->interval_ns;
}

#endif /* TESSERA_HOOK_COMPUTE_SAMPLING_H_ */
