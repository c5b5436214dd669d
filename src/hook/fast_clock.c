#include "os.h"

#include "fast_clock.h"

#include <string.h>

#include "at_fork.h"

/* At most this many counter ticks between the two counter reads around clock_gettime (about
 * 0.4 us at 2.5 GHz; the call itself takes about 70): a pair read around a preemption or an
 * interrupt would skew the anchor and the rate, and is not used. */
#define FAST_CLOCK_MAX_SKEW 1000ull

struct fast_clock_anchor fast_clock_anchor;
int fast_clock_counter; /* 0 undecided, 1 the counter, -1 clock_gettime */

void fast_clock_init(void) {
  int use = -1;
#if defined(__x86_64__)
  char source[64];
  if (os_read_small_file("/sys/devices/system/clocksource/clocksource0/current_clocksource", source,
                         sizeof(source)) == 0 &&
      strcmp(source, "tsc\n") == 0) {
    use = 1;
  }
#endif
  __atomic_store_n(&fast_clock_counter, use, __ATOMIC_RELAXED);
}

int fast_clock_uses_counter(void) {
  return __atomic_load_n(&fast_clock_counter, __ATOMIC_RELAXED) == 1;
}

#if defined(__x86_64__)
/* Makes (tsc, ns) the anchor; the rate is measured against the previous anchor once that is at
 * least half an anchor period old, and smoothed (1/8 weight per measurement). One thread at a
 * time; a thread that finds another re-anchoring leaves it to it. */
static void reanchor(uint64_t tsc, uint64_t ns) {
  struct fast_clock_anchor* a = &fast_clock_anchor;
  if (__atomic_exchange_n(&a->writer, 1, __ATOMIC_ACQUIRE)) return;
  uint64_t mult = a->mult;
  uint64_t elapsed = ns - a->ns, ticks = tsc - a->tsc;
  int write = 1;
  if (a->ns != 0 && ns > a->ns && tsc > a->tsc) {
    if (elapsed < FAST_CLOCK_ANCHOR_NS / 2) {
      write = 0; /* too short to measure the rate against: keep the older anchor */
    } else if (elapsed < (1ull << 32)) {
      uint64_t measured = (elapsed << 32) / ticks;
      mult = mult == 0 ? measured : mult - mult / 8 + measured / 8;
    }
  }
  if (write) {
    uint32_t seq = a->seq;
    __atomic_store_n(&a->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&a->tsc, tsc, __ATOMIC_RELAXED);
    __atomic_store_n(&a->ns, ns, __ATOMIC_RELAXED);
    __atomic_store_n(&a->mult, mult, __ATOMIC_RELAXED);
    __atomic_store_n(&a->span, mult ? (FAST_CLOCK_ANCHOR_NS << 32) / mult : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&a->seq, seq + 2, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&a->writer, 0, __ATOMIC_RELEASE);
}
#endif

uint64_t fast_clock_slow(void) {
#if defined(__x86_64__)
  if (__atomic_load_n(&fast_clock_counter, __ATOMIC_RELAXED) == 1) {
    uint64_t before = __builtin_ia32_rdtsc();
    uint64_t ns = os_now_ns();
    uint64_t after = __builtin_ia32_rdtsc();
    if (after - before <= FAST_CLOCK_MAX_SKEW) reanchor(before + (after - before) / 2, ns);
    return ns;
  }
#endif
  return os_now_ns();
}

void fast_clock_reset_in_child(void) {
  /* A thread that was re-anchoring at the fork does not exist in the child: start over (the rate
   * is measured again within a millisecond). */
  memset(&fast_clock_anchor, 0, sizeof(fast_clock_anchor));
}
HOOK_RESET_IN_CHILD(fast_clock_reset_in_child)
