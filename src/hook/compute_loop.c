#include "compute_loop.h"

#include <stdlib.h>

/* Parameters (docs/compute-limit.md, "Constants"). */
#define OTHERS_MIN_PERCENT 5.0 /* others' work below this is noise, not contention */
#define BUSY_MIN_PERCENT 80.0  /* together this busy: someone waited (a switch costs time) */
#define TIME_CONSTANT_S 0.5    /* a ratio is taken whole over this long */
#define DEAD_BAND 0.5          /* a share this close to the limit, in points, moves nothing */
#define RATIO_MAX 2.0          /* a ratio above is taken as this */
#define RATIO_MIN 0.125        /* and one below as this (FIFO inflates spans twentyfold) */
#define GAIN_MIN (1.0 / 64)    /* a 64-fold inflation of the estimates is the most corrected */
#define GAIN_MAX 16.0          /* a 16-fold underestimate likewise */
#define STREAK_MAX 4           /* a step one way goes at most this many times as far */
#define MAX_PIDS 256           /* distinct processes of one reading taken into account */

#define WINDOW_US ((uint64_t)(LOOP_WINDOW_S * 1e6))
#define LOOKBACK_US ((uint64_t)(LOOP_LOOKBACK_S * 1e6))
#define SAMPLE_SPAN_US ((uint64_t)(LOOP_SAMPLE_SPAN_S * 1e6))

int loop_contended(double ours, double others) {
  return ours > 0 && others >= OTHERS_MIN_PERCENT && ours + others >= BUSY_MIN_PERCENT;
}

/* One process's samples in a reading. */
struct process_samples {
  unsigned pid;
  unsigned count;          /* in the lookback */
  uint64_t newest, second; /* the two newest stamps (0: none) */
  unsigned newest_util;
  uint64_t sum;       /* smUtil of the samples in the window that can be read */
  unsigned in_window; /* how many */
  uint64_t oldest;    /* the oldest of them */
  int early;          /* one of its samples in the window covers time before the start */
};

static struct process_samples* entry_of(struct process_samples* table, int* n, unsigned pid) {
  for (int i = 0; i < *n; ++i) {
    if (table[i].pid == pid) return &table[i];
  }
  if (*n == MAX_PIDS) return NULL;
  table[*n] = (struct process_samples){.pid = pid};
  return &table[(*n)++];
}

static int listed(const pid_t* pids, int n, unsigned pid) {
  for (int i = 0; i < n; ++i) {
    if ((unsigned)pids[i] == pid) return 1;
  }
  return 0;
}

/* Adds a process's share over [from, to] to the weighed sums of a reading. */
struct weighed {
  double from, to, then, weight, then_weight;
};

static void weigh(struct weighed* w, const struct loop_history* h, double share, uint64_t from,
                  uint64_t to) {
  w->from += share * (double)from;
  w->to += share * (double)to;
  w->weight += share;
  const double then = h != NULL ? loop_history_mean(h, from, to) : 0;
  if (then > 0) {
    w->then += share * then;
    w->then_weight += share;
  }
}

int loop_measure(const nvmlProcessUtilizationSample_t* samples, unsigned count, uint64_t now_us,
                 uint64_t start_us, uint64_t switch_us, const pid_t* ours, int n,
                 const struct loop_history* h, struct loop_reading* r) {
  /* A period that began before the start or the switch is not read. */
  const uint64_t from_us = switch_us > start_us ? switch_us : start_us;
  struct process_samples* table = malloc(MAX_PIDS * sizeof(*table)); /* off the reaper's stack */
  if (table == NULL) return 0;
  int distinct = 0;
  for (unsigned i = 0; i < count; ++i) {
    const nvmlProcessUtilizationSample_t* s = &samples[i];
    if (s->timeStamp + LOOKBACK_US < now_us) continue;
    struct process_samples* e = entry_of(table, &distinct, s->pid);
    if (e == NULL) continue;
    ++e->count;
    if (s->timeStamp > e->newest) {
      e->second = e->newest;
      e->newest = s->timeStamp;
      e->newest_util = s->smUtil < 100 ? s->smUtil : 100;
    } else if (s->timeStamp > e->second) {
      e->second = s->timeStamp;
    }
  }
  /* Sampled every period: the samples in the window, each covering its period. */
  for (unsigned i = 0; i < count; ++i) {
    const nvmlProcessUtilizationSample_t* s = &samples[i];
    if (s->timeStamp + WINDOW_US < now_us) continue;
    struct process_samples* e = entry_of(table, &distinct, s->pid);
    if (e == NULL || e->count < 2) continue;
    if (listed(ours, n, s->pid) && s->timeStamp < from_us + (e->newest - e->second)) {
      e->early = 1;
      continue;
    }
    e->sum += s->smUtil < 100 ? s->smUtil : 100;
    if (e->in_window++ == 0 || s->timeStamp < e->oldest) e->oldest = s->timeStamp;
  }
  int seen = 0, readable = 1;
  /* The time the container's measure covers: its processes' periods, weighed by their shares. */
  struct weighed w = {0, 0, 0, 0, 0};
  r->ours = r->others = 0;
  r->newest_us = 0;
  for (int i = 0; i < distinct; ++i) {
    const struct process_samples* e = &table[i];
    const int mine = listed(ours, n, e->pid);
    double share;
    if (e->count >= 2) {
      if (mine && e->early && e->in_window == 0) readable = 0;
      share = e->in_window > 0 ? (double)e->sum / e->in_window : 0;
      if (mine && e->in_window > 0) {
        seen = 1;
        weigh(&w, h, share, e->oldest - (e->newest - e->second), e->newest);
        if (e->newest > r->newest_us) r->newest_us = e->newest;
      }
    } else {
      /* One instant at a time: its newest sample is its share of the second before it, which
       * for the container's processes in their first second holds the time before the start:
       * taken over the part after it, once that is a quarter of the second. */
      share = e->newest_util;
      if (mine) {
        const uint64_t after = e->newest > start_us ? e->newest - start_us : 0;
        if (after < SAMPLE_SPAN_US / 4) readable = 0;
        /* Time before a switch ran at the old share: no part of it may be read as this one. */
        if (switch_us != 0 && e->newest < switch_us + SAMPLE_SPAN_US) readable = 0;
        if (after > 0 && after < SAMPLE_SPAN_US) share = share * SAMPLE_SPAN_US / after;
        if (share > 100) share = 100;
        seen = 1;
        const uint64_t span = after < SAMPLE_SPAN_US ? after : SAMPLE_SPAN_US;
        weigh(&w, h, share, e->newest - span, e->newest);
        if (e->newest > r->newest_us) r->newest_us = e->newest;
      }
    }
    if (mine) {
      r->ours += share;
    } else {
      r->others += share;
    }
  }
  free(table);
  r->from_us = w.weight > 0 ? (uint64_t)(w.from / w.weight) : now_us - WINDOW_US;
  r->to_us = w.weight > 0 ? (uint64_t)(w.to / w.weight) : now_us;
  /* Each process's share was measured under the gains of its own samples' time: known only when
   * the history covers every one of them. */
  r->gain_then = w.weight > 0 && w.then_weight >= w.weight ? w.then / w.weight : 0;
  return seen && readable;
}

void loop_history_note(struct loop_history* h, uint64_t now_us, uint32_t gain) {
  h->us[h->next] = now_us;
  h->gain[h->next] = gain != 0 ? gain : LOOP_GAIN_ONE;
  h->next = (h->next + 1) % LOOP_HISTORY;
  if (h->count < LOOP_HISTORY) ++h->count;
}

double loop_history_mean(const struct loop_history* h, uint64_t from_us, uint64_t to_us) {
  if (h->count == 0 || to_us <= from_us) return 0;
  const int first = (h->next - h->count + LOOP_HISTORY) % LOOP_HISTORY;
  if (h->us[first] > from_us) return 0; /* the history starts after the measure did */
  double sum = 0;
  for (int k = 0; k < h->count; ++k) {
    const int i = (first + k) % LOOP_HISTORY;
    const uint64_t begin = h->us[i];
    const uint64_t end = k + 1 < h->count ? h->us[(i + 1) % LOOP_HISTORY] : UINT64_MAX;
    const uint64_t a = begin > from_us ? begin : from_us;
    const uint64_t b = end < to_us ? end : to_us;
    if (b > a) sum += (double)h->gain[i] * (double)(b - a);
  }
  return sum / (double)(to_us - from_us);
}

void loop_step(struct loop_gains* g, int percent, const struct loop_reading* r) {
  double gain = g->gain != 0 ? g->gain : LOOP_GAIN_ONE;
  double recent = g->recent != 0 ? g->recent : gain;
  /* The gain over the window, whose samples are on average half a window old: what the share was
   * measured under when the reading cannot say. */
  double follow = r->dt_s / (LOOP_WINDOW_S / 2);
  recent += (gain - recent) * (follow < 1.0 ? follow : 1.0);
  g->recent = (uint32_t)(recent + 0.5);
  const double then = r->gain_then > 0 ? r->gain_then : recent;
  if (percent <= 0) {
    g->streak = 0; /* not held: the gain stays, and no steps one way go on */
    return;
  }
  if (r->ours <= 0 || r->dt_s <= 0) return; /* nothing seen */
  /* While the budget holds the container its share goes as 1 / gain: the share measured under the
   * recent gains, taken to today's gain. Without it a step taken before the window saw its effect
   * was taken again at the next poll, and the next (a hard 30% container beside a busy neighbour
   * went from 19% to 33.5%). */
  double ratio = r->ours * then / gain / percent;
  double off = (ratio - 1.0) * percent;
  if ((off > -DEAD_BAND && off < DEAD_BAND) || (ratio < 1.0 && !r->held)) {
    g->streak = 0; /* at the limit, or it did not use its share: nothing to give back */
    return;
  }
  if (ratio > RATIO_MAX) ratio = RATIO_MAX;
  if (ratio < RATIO_MIN) ratio = RATIO_MIN;
  /* An error that keeps its sign in a share measured wholly after the steps against it began is
   * a share that follows the gain less than 1 / gain (a time-sliced neighbour sets part of it,
   * host gaps another): the step goes further, up to the whole ratio (a 70% container beside a
   * hard 30% one with kernels as long as a slice took 6 s to move its gain from 0.98 to 0.72,
   * 66-68% all the while). A reading that still covers time before them says nothing of their
   * effect: stepping further on such lagging readings overshot (75% alone ran at 95%). */
  const int32_t way = ratio > 1.0 ? 1 : -1;
  if (g->streak != way) {
    g->streak = way;
    g->streak_us = r->now_us;
  }
  uint64_t n = 1;
  if (r->from_us > g->streak_us && r->to_us > r->from_us) {
    n = 2 + (r->from_us - g->streak_us) / (r->to_us - r->from_us);
    if (n > STREAK_MAX) n = STREAK_MAX;
  }
  double dt = r->dt_s * (double)n;
  if (dt > TIME_CONSTANT_S) dt = TIME_CONSTANT_S;
  /* The library links no libm: the step is linear in the ratio, which for a step of the whole
   * time constant is the ratio itself. */
  double next = gain * (1.0 + (ratio - 1.0) * dt / TIME_CONSTANT_S);
  if (next < GAIN_MIN * LOOP_GAIN_ONE) next = GAIN_MIN * LOOP_GAIN_ONE;
  if (next > GAIN_MAX * LOOP_GAIN_ONE) next = GAIN_MAX * LOOP_GAIN_ONE;
  g->gain = (uint32_t)(next + 0.5);
}
