/* The compute limiter's feedback loop: every charge of a device is multiplied by the region's
 * compute_gain, which each poll of NVML's per-process utilisation moves by the ratio of the
 * container's measured share to its limit (an integral controller with anti-windup: it falls only
 * while the budget held the container). loop_measure and loop_step are pure (table-tested);
 * compute_loop_poll.c reads NVML from the region's reaper thread, one process of the container
 * per device at a time. Why and the constants: docs/compute-limit.md, "The loop".
 *
 *   loop_note_device(index, dev);  // a launch's slow path: remember the device
 *   loop_poll(held);               // the reaper, every 200 ms: poll what is due
 *
 * Thread-safety: thread-safe; the gains are the region's, changed with atomic operations. */
#ifndef TESSERA_HOOK_COMPUTE_LOOP_H_
#define TESSERA_HOOK_COMPUTE_LOOP_H_

#include <stdint.h>
#include <sys/types.h>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"

/* The gain 1.0 in compute_gain's units; the region's 0 also means 1.0. */
#define LOOP_GAIN_ONE 65536u

/* The measure's window: a process sampled every period reads as the mean of its samples this
 * recent. */
#define LOOP_WINDOW_S 0.5

/* How far back a poll asks NVML: a process sampled one instant at a time (an H200) may have no
 * sample in the window; its newest this recent stands for it. */
#define LOOP_LOOKBACK_S 3.0

/* What a sample that stands alone covers: NVML's share of the last second (an H200's). */
#define LOOP_SAMPLE_SPAN_S 1.0

/* What one poll read from NVML and the region. */
struct loop_reading {
  double ours;     /* the container's share of the device over the window, percent */
  double others;   /* the other processes' share over the same time, percent */
  int held;        /* a launch of the container waited on its budget since the last poll */
  double dt_s;     /* seconds since the last step */
  uint64_t now_us; /* when it was read (CLOCK_REALTIME us) */
  /* The time the container's share was measured over (its processes' samples' periods, weighed
   * by their shares), and its newest sample's stamp; CLOCK_REALTIME us. */
  uint64_t from_us, to_us, newest_us;
  double gain_then; /* the mean gain over [from_us, to_us] (0: unknown, the recent gain is used) */
};

/* The gains a process saw in the region at each reaper round, newest last, to tell what gain a
 * reading was measured under. */
#define LOOP_HISTORY 32 /* rounds of 200 ms: 6.4 s, more than a reading reaches back */
struct loop_history {
  uint64_t us[LOOP_HISTORY];
  uint32_t gain[LOOP_HISTORY];
  int next, count;
};

void loop_history_note(struct loop_history* h, uint64_t now_us, uint32_t gain);

/* The gain averaged over [from_us, to_us] (each noted gain held until the next note); 0 when the
 * history does not reach back to from_us. */
double loop_history_mean(const struct loop_history* h, uint64_t from_us, uint64_t to_us);

/* Reads NVML's samples of the last LOOP_LOOKBACK_S at `now_us` (CLOCK_REALTIME us, NVML's
 * stamps) into r->ours (the container's processes, host PIDs `ours`, n of them), r->others,
 * r->from_us, r->to_us, r->newest_us and, from the history `h` of the gains (NULL: none), the gain
 * each process's share was measured under, weighed by share, in r->gain_then. A process with
 * several samples is sampled every period: its share is the mean of those in the window (0 when
 * none). A process with one sample is sampled one instant at a time, each sample its share of the
 * last second: that sample is its share. The container's samples that cover time before
 * `start_us` (its first launch) would read its start-up as idle: a period that began before it is
 * not read, and a second's share is taken over the part after it (none under a quarter second).
 * `switch_us` (0: none) is when the container's percent last changed (loop_limit_changed): the
 * container's samples that cover time before it measured the old share, not idleness, and are not
 * read at all (a period that began before it, a second's share that reaches back before it).
 * Returns whether there is a reading (the container ran, and every one of its processes NVML
 * showed can be read so). */
int loop_measure(const nvmlProcessUtilizationSample_t* samples, unsigned count, uint64_t now_us,
                 uint64_t start_us, uint64_t switch_us, const pid_t* ours, int n,
                 const struct loop_history* h, struct loop_reading* r);

/* The loop's state (the region's compute_gain, compute_gain_recent and compute_gain_streak); the
 * gains in 1/LOOP_GAIN_ONE, 0 meaning 1.0. */
struct loop_gains {
  uint32_t gain;      /* every charge is multiplied by it */
  uint32_t recent;    /* the gain averaged over the window: what the share was measured under */
  int32_t streak;     /* the last steps all one way: 1 raised, -1 lowered (0: none) */
  uint64_t streak_us; /* when the first of them was taken (CLOCK_REALTIME us) */
};

/* Whether the reading shows the device contended: the container ran while other processes'
 * work filled the rest, so that together they kept it busy. Others that only ran while the
 * container left the device idle are not contention. */
int loop_contended(double ours, double others);

/* One step, for a container held at `percent` now (0: not held, the gain stays). The share is
 * first taken to today's gain (ours x gain then / gain, the recent gain when the reading has no
 * gain then: while held, the share goes as 1 / gain);
 * its ratio to the percent, within 1/8..2, multiplies the gain by 1 + (ratio - 1) x dt x n / time
 * constant. n is 1, or, when the steps have all gone one way since before the reading's measure
 * began (its share was measured wholly under their gains, and still says the same), 2 and one
 * more for each whole measure's length since: at most 4, dt x n at most the time
 * constant (the whole ratio). A share within half a point of the percent moves nothing and ends
 * the steps one way; the gain stays within 1/64..16 and falls only while `held`. `recent` follows
 * the gain in any case. */
void loop_step(struct loop_gains* g, int percent, const struct loop_reading* r);

/* What the loop asks the limiter at each reading of container device `index`: NVML showed the
 * device contended (1) or not; the answer is the percent the container is held at (0: not held,
 * the gain stays). */
typedef int (*loop_held_fn)(int index, int contended);

/* Remembers the NVML device of container device `index` (CUDA device `dev`) for the poll, and
 * the container's first launch on it; cheap once known. Called from a launch's slow path. */
void loop_note_device(int index, CUdevice dev);

/* Polls NVML for every device noted whose poll is due (the reaper calls it every 200 ms) and
 * moves the devices' gains. */
void loop_poll(loop_held_fn held);

/* The container's percent on device `index` changed (the limits file was replaced, issue 36).
 * The gain stays: it corrects the estimates of the container's kernels, which the percent does not
 * change. What was measured under the old percent goes: this process reads no sample that covers
 * time before now (loop_measure's switch_us), the next reading only starts the steps' clock (the
 * region's compute_gain_us) and no steps one way go on (compute_gain_streak). Every process of the
 * container calls it when it applies the change. Why: docs/compute-limit.md, "Resizing". */
void loop_limit_changed(int index);

#endif /* TESSERA_HOOK_COMPUTE_LOOP_H_ */
