#include "compute_correction.h"

/* Parameters (docs/compute-limit.md explains each). */
#define MIN_ESTIMATED_NS 10000000ull /* the averages must hold this much expected device time */
#define DEADBAND 62259u              /* 0.95: a ratio above it is not corrected */
#define FLOOR (CORRECTION_ONE / 64)  /* at most a 64-fold inflation is corrected */
#define MOVED_BY_EIGHTH(old, new) \
  ((new) < (old) - (old) / 8 || (new) > (old) + (old) / 8) /* restarts the sums */
#define OTHERS_MIN_PERCENT 5 /* others' work below this is noise, not contention */
#define BUSY_MIN_PERCENT 90  /* the device was saturated: someone waited */

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

void correction_estimate_changed(struct tessera_region_device* d, uint64_t old_ns, uint64_t new_ns,
                                 uint64_t now_us) {
  if (new_ns == 0 || old_ns == 0 || new_ns == old_ns) return;
  /* Every move, however small, keeps the function's charge: moves add up. */
  uint32_t c = __atomic_load_n(&d->compute_correction, __ATOMIC_RELAXED);
  uint64_t scaled = (uint64_t)(c == 0 ? CORRECTION_ONE : c) * old_ns / new_ns;
  __atomic_store_n(&d->compute_correction,
                   scaled >= DEADBAND ? 0
                   : scaled < FLOOR   ? FLOOR
                                      : (uint32_t)scaled,
                   __ATOMIC_RELAXED);
  if (!MOVED_BY_EIGHTH(old_ns, new_ns)) return;
  __atomic_store_n(&d->compute_used_avg_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_estimated_avg_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&d->compute_changed_us, now_us, __ATOMIC_RELAXED);
}
