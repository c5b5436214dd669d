/* The compute limiter's second signal: NVML's per-process utilisation of the container's
 * processes, which other contexts cannot inflate (docs/compute-limit.md, "Correction").
 *
 * Every span the limiter times is an upper bound of the kernel's own time; when another context
 * keeps the device saturated from the container's first launch, no span is ever the kernel's
 * alone and every estimate stays too high. The correction compares, over the same NVML sample
 * periods, the device time the container really used (NVML's samples of its host PIDs) with the
 * device time the limiter expected for its launches (the region's compute_estimated_ns), and
 * scales every charge of the device by their ratio (compute_correction, at most 1).
 *
 * The arithmetic is in compute_correction.c, the poll of NVML in compute_nvml_poll.c.
 *
 * Thread-safety: thread-safe; the poll runs in the region's reaper thread, one process of the
 * container at a time per device (elected through compute_poll_us). */
#ifndef TESSERA_HOOK_COMPUTE_CORRECTION_H_
#define TESSERA_HOOK_COMPUTE_CORRECTION_H_

#include <stdint.h>

#include "abi/cuda_driver.h"
#include "abi/shared_region.h"

/* The charge factor 1.0 in compute_correction's units. */
#define CORRECTION_ONE 65536u

/* compute_seen_estimated_ns while the counter's value at compute_seen_us is not known. */
#define CORRECTION_UNALIGNED UINT64_MAX

/* Remembers the NVML device of container device `index` (CUDA device `dev`) for the poll; cheap
 * once known. Called from a launch's slow path. */
void correction_note_device(int index, CUdevice dev);

/* Polls NVML for every device noted whose poll is due (the reaper calls it every 200 ms) and
 * updates the devices' compute_correction. */
void correction_poll(void);

/* A key's estimate moved from `old_ns` to `new_ns` on device `d`; its launches made `share` (0 to
 * 1) of the container's expected device time lately. The charges stay what they were: the
 * correction is divided by the growth of the expected time, 1 + share x (new/old - 1) (never
 * above 1, never below its floor). A fall means the inflation the correction compensated may be
 * gone; a rise (a window of spans that were all inflated, or a kernel that really got longer) is
 * taken only as far as NVML's samples confirm it. The expected time in the sums, and the counter's
 * growth since its snapshots, are scaled by the same growth: the next poll compares the used time
 * with the expected time at the new estimates. */
void correction_estimate_changed(struct tessera_region_device* d, uint64_t old_ns, uint64_t new_ns,
                                 double share);

/* Whether one NVML sample period shows the device contended: the container's processes used it
 * (`ours_percent` of the period) while other processes' work (`others_percent`) filled the rest,
 * so that together they kept it busy. Other processes that only ran while the container left the
 * device idle are not contention. */
int correction_period_contended(unsigned ours_percent, unsigned others_percent);

/* The pure part of a poll, for tests: device time `used_ns` seen by NVML and `estimated_ns`
 * expected over the same periods, added to the decaying sums *used_avg and *estimated_avg.
 * Returns the new compute_correction (0 = none). */
uint32_t correction_update(uint64_t used_ns, uint64_t estimated_ns, uint64_t* used_avg,
                           uint64_t* estimated_avg);

/* A hard limit's ceiling on the correction `c` (0 = none): NVML saw the container use
 * `used_avg_ns` of device time in sample periods `wall_avg_us` long (the same decaying sums).
 * When that is more than `percent` of the periods, the charges were too small by as much (the
 * expected time is counted at launch, the used time as the kernels run, and a queue that builds
 * up makes the ratio too low for a while): the correction is raised by that much. Returns the
 * correction (0 = none). */
uint32_t correction_cap(uint32_t c, uint64_t used_avg_ns, uint64_t wall_avg_us, int percent);

#endif /* TESSERA_HOOK_COMPUTE_CORRECTION_H_ */
