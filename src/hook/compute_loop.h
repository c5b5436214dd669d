/* The compute limiter's feedback loop: the container's share of the device as NVML measures it,
 * held at the limit by a gain on every charge (docs/compute-limit.md, "The loop").
 *
 * The charges (compute.c) are estimates of each launch's device time; on a real GPU they are off
 * by what no estimate sees: a span that holds a neighbour's time slice, clocks that move, kernels
 * of one context that overlap. NVML's per-process utilisation says what the container really got.
 * Every charge of a device is multiplied by the region's compute_gain, which this loop moves each
 * poll by the ratio of the measured share to the limit, as an integral controller in log space:
 * up when the container got more than its share, down when it got less *and* the budget held it
 * back (anti-windup: a container that launches too little to use its share must not pile up
 * credit). A hard limit is held always, an elastic one only while the device is contended.
 *
 * The arithmetic is in compute_loop.c (pure, table-tested), the poll of NVML in
 * compute_loop_poll.c.
 *
 * Thread-safety: thread-safe; the poll runs in the region's reaper thread, one process of the
 * container at a time per device (elected through compute_poll_us). */
#ifndef TESSERA_HOOK_COMPUTE_LOOP_H_
#define TESSERA_HOOK_COMPUTE_LOOP_H_

#include <stdint.h>

#include "abi/cuda_driver.h"

/* The gain 1.0 in compute_gain's units; the region's 0 also means 1.0. */
#define LOOP_GAIN_ONE 65536u

/* The measure's window: a process's share is the mean of its samples this recent. */
#define LOOP_WINDOW_S 0.5

/* What one poll read from NVML and the region. */
struct loop_reading {
  double ours;   /* the container's share of the device over the window, percent */
  double others; /* the other processes' share over the same time, percent */
  int held;      /* a launch of the container waited on its budget since the last poll */
  double dt_s;   /* seconds since the last step */
};

/* The loop's state (the region's compute_gain and compute_gain_recent), in 1/LOOP_GAIN_ONE;
 * 0 means 1.0. */
struct loop_gains {
  uint32_t gain;   /* every charge is multiplied by it */
  uint32_t recent; /* the gain averaged over the window: what the share was measured under */
};

/* Whether the reading shows the device contended: the container ran while other processes'
 * work filled the rest, so that together they kept it busy. Others that only ran while the
 * container left the device idle are not contention. */
int loop_contended(double ours, double others);

/* One step, for a container held at `percent` now (0: not held, the gain stays). The share is
 * first taken to today's gain (ours x recent / gain: while held, the share goes as 1 / gain);
 * its ratio to the percent, within 1/8..2, multiplies the gain by 1 + (ratio - 1) x dt / time
 * constant. A share within half a point of the percent moves nothing; the gain stays within
 * 1/64..16 and falls only while `held`. `recent` follows the gain in any case. */
void loop_step(struct loop_gains* g, int percent, const struct loop_reading* r);

/* Remembers the NVML device of container device `index` (CUDA device `dev`) for the poll; cheap
 * once known. Called from a launch's slow path. */
void loop_note_device(int index, CUdevice dev);

/* Polls NVML for every device noted whose poll is due (the reaper calls it every 200 ms) and
 * moves the devices' gains. */
void loop_poll(void);

#endif /* TESSERA_HOOK_COMPUTE_LOOP_H_ */
