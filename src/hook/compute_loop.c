#include "compute_loop.h"

/* Parameters (docs/compute-limit.md, "Constants"). */
#define OTHERS_MIN_PERCENT 5.0 /* others' work below this is noise, not contention */
#define BUSY_MIN_PERCENT 80.0  /* together this busy: someone waited (a switch costs time) */
#define TIME_CONSTANT_S 0.5    /* a ratio is taken whole over this long */
#define DEAD_BAND 0.5          /* a share this close to the limit, in points, moves nothing */
#define RATIO_MAX 2.0          /* a ratio above is taken as this */
#define RATIO_MIN 0.125        /* and one below as this (FIFO inflates spans twentyfold) */
#define GAIN_MIN (1.0 / 64)    /* a 64-fold inflation of the estimates is the most corrected */
#define GAIN_MAX 16.0          /* a 16-fold underestimate likewise */

int loop_contended(double ours, double others) {
  return ours > 0 && others >= OTHERS_MIN_PERCENT && ours + others >= BUSY_MIN_PERCENT;
}

void loop_step(struct loop_gains* g, int percent, const struct loop_reading* r) {
  double gain = g->gain != 0 ? g->gain : LOOP_GAIN_ONE;
  double recent = g->recent != 0 ? g->recent : gain;
  /* The gain over the measure's window, whose samples are on average half a window old. */
  double follow = r->dt_s / (LOOP_WINDOW_S / 2);
  recent += (gain - recent) * (follow < 1.0 ? follow : 1.0);
  g->recent = (uint32_t)(recent + 0.5);
  if (percent <= 0 || r->ours <= 0 || r->dt_s <= 0) return; /* nothing held or seen */
  /* While the budget holds the container its share goes as 1 / gain: the share measured under the
   * recent gains, taken to today's gain. Without it a step taken before the window saw its effect
   * was taken again at the next poll, and the next (a hard 30% container beside a busy neighbour
   * went from 19% to 33.5%). */
  double ratio = r->ours * recent / gain / percent;
  double off = (ratio - 1.0) * percent;
  if (off > -DEAD_BAND && off < DEAD_BAND) return;
  if (ratio < 1.0 && !r->held) return; /* it did not use its share: nothing to give back */
  if (ratio > RATIO_MAX) ratio = RATIO_MAX;
  if (ratio < RATIO_MIN) ratio = RATIO_MIN;
  double dt = r->dt_s < TIME_CONSTANT_S ? r->dt_s : TIME_CONSTANT_S;
  /* The library links no libm: the step is linear in the ratio, which for a step of the whole
   * time constant is the ratio itself. */
  double next = gain * (1.0 + (ratio - 1.0) * dt / TIME_CONSTANT_S);
  if (next < GAIN_MIN * LOOP_GAIN_ONE) next = GAIN_MIN * LOOP_GAIN_ONE;
  if (next > GAIN_MAX * LOOP_GAIN_ONE) next = GAIN_MAX * LOOP_GAIN_ONE;
  g->gain = (uint32_t)(next + 0.5);
}
