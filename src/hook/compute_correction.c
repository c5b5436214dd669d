#include "compute_correction.h"

/* Parameters (docs/compute-limit.md explains each). */
#define MIN_ESTIMATED_NS 10000000ull /* the averages must hold this much expected device time */
#define DEADBAND 62259u              /* 0.95: a ratio above it is not corrected */
#define FLOOR (CORRECTION_ONE / 64)  /* at most a 64-fold inflation is corrected */
#define OTHERS_MIN_PERCENT 5         /* others' work below this is noise, not contention */
#define BUSY_MIN_PERCENT 90          /* the device was saturated: someone waited */

int correction_period_contended(unsigned ours_percent, unsigned others_percent) {
  return ours_percent > 0 && others_percent >= OTHERS_MIN_PERCENT &&
         ours_percent + others_percent >= BUSY_MIN_PERCENT;
}

uint32_t correction_update(uint64_t used_ns, uint64_t estimated_ns, uint64_t* used_avg,
                           uint64_t* estimated_avg) {
  /* Halved at every poll with new samples: about the last second weighs. */
  *used_avg = *used_avg / 2 + used_ns;
  *estimated_avg = *estimated_avg / 2 + estimated_ns;
  if (*estimated_avg < MIN_ESTIMATED_NS || *used_avg >= *estimated_avg) return 0;
  double ratio = (double)*used_avg / (double)*estimated_avg * CORRECTION_ONE;
  if (ratio >= DEADBAND) return 0;
  return ratio < FLOOR ? FLOOR : (uint32_t)ratio;
}

uint32_t correction_cap(uint32_t c, uint64_t used_avg_ns, uint64_t wall_avg_us, int percent) {
  if (c == 0 || percent <= 0 || wall_avg_us == 0) return c;
  double over = (double)used_avg_ns / ((double)wall_avg_us * 10.0 * percent); /* used / P% */
  if (over <= 1.0) return c;
  double raised = c * over;
  return raised >= DEADBAND ? 0 : (uint32_t)raised;
}

/* Multiplies the region's value at `at` by `factor` (a CAS loop: the container's processes and
 * its poller change it concurrently). */
static void scale_field(uint64_t* at, double factor) {
  uint64_t old = __atomic_load_n(at, __ATOMIC_RELAXED), next;
  do {
    next = (uint64_t)((double)old * factor);
  } while (!__atomic_compare_exchange_n(at, &old, next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* Moves a snapshot of the expected-time counter (its value at a poll or at a sample stamp) so
 * that the counter's growth since then, `counter - snapshot`, counts as if it had been counted at
 * the new estimates: `grown` times as much. The counter itself only grows. */
static void rebase_snapshot(uint64_t* snapshot, uint64_t counter, double grown) {
  uint64_t old = __atomic_load_n(snapshot, __ATOMIC_RELAXED), next;
  do {
    if (old == CORRECTION_UNALIGNED || old >= counter)
      return; /* unknown, or nothing counted since */
    double since = (double)(counter - old) * grown;
    next = since >= (double)counter ? 0 : counter - (uint64_t)since;
  } while (
      !__atomic_compare_exchange_n(snapshot, &old, next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

void correction_estimate_changed(struct tessera_region_device* d, uint64_t old_ns, uint64_t new_ns,
                                 double share) {
  if (new_ns == 0 || old_ns == 0 || new_ns == old_ns) return;
  /* The container's expected time changes by the key's share of the move: every move, however
   * small, keeps the charges what they were (moves add up). */
  double grown = 1.0 + share * ((double)new_ns / (double)old_ns - 1.0);
  uint32_t c = __atomic_load_n(&d->compute_correction, __ATOMIC_RELAXED);
  double scaled = (double)(c == 0 ? CORRECTION_ONE : c) / grown;
  __atomic_store_n(&d->compute_correction,
                   scaled >= DEADBAND ? 0
                   : scaled < FLOOR   ? FLOOR
                                      : (uint32_t)scaled,
                   __ATOMIC_RELAXED);
  /* The sums and the counter's snapshots follow: the expected time they hold counts as the new
   * estimates would have counted it, so the next poll compares NVML's used time with the
   * expected time at today's estimates. Restarted instead, as before, the sums of a container
   * whose estimate moved more often than two polls (a graph's estimate rising in windows of
   * spans inflated by a neighbour and falling at its next exact span) were never compared again,
   * and the factor kept whatever error it had at the last comparison: a hard 30% container got
   * 33.6% of a FIFO device for three seconds. */
  scale_field(&d->compute_estimated_avg_ns, grown);
  uint64_t counter = __atomic_load_n(&d->compute_estimated_ns, __ATOMIC_RELAXED);
  rebase_snapshot(&d->compute_seen_estimated_ns, counter, grown);
  rebase_snapshot(&d->compute_poll_estimated_ns, counter, grown);
}
