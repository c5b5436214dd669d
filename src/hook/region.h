/* This process's view of the shared region (abi/shared_region.h): opening or creating it, the
 * robust lock, charging and releasing memory per device, this process's slot, and the release of
 * dead processes' charges.
 *
 * Dead processes: a process holds an open-file-description lock on its slot's byte of the region
 * file (abi/shared_region.h, TESSERA_SLOT_LIVENESS_LOCK) for as long as it lives, and the kernel
 * drops it when the process dies: a slot whose lock no one holds is dead, whatever PID namespace
 * its process was in (pods sharing one DRA claim share its region). A slot without that flag (an
 * older library) is dead when its PID no longer exists, is a zombie, or has another start time
 * (PID reuse). A dead slot's charge is released by a sweep, and only so: a process never gives its
 * slot back at exit, since the driver frees what the process still holds after every user-space
 * destructor has run (in its own exit handler, or when the kernel closes the device files), and
 * a charge released before that would let other processes allocate memory the device still holds.
 * Sweeps run (1) on the allocation path
 * when a charge does not fit, before it is refused, and (2) in a reaper thread that every process
 * which holds a slot starts: it wakes every 200 ms and sweeps unless another process's reaper swept
 * in the last 150 ms (last_sweep_ns), so a dead process's charge is gone within about 0.4 s even
 * when no process allocates, at a cost of about five sweeps a second per container.
 *
 * Charges and releases are lock-free (atomic operations on the device's total and the process's
 * slot, in the order that errs high if the process is killed between them); the region's robust
 * process-shared mutex serialises only taking and freeing slots, so a process stopped while it
 * holds the lock delays new processes of the container (by at most a second each, then they are
 * refused), never the charges and releases of running ones. A total left above the slots' sum by
 * a process killed mid-update is given back when the container next has no process.
 *
 * Thread-safety: all functions are thread-safe. After fork() the child calls
 * region_reset_in_child(). */
#ifndef TESSERA_HOOK_REGION_H_
#define TESSERA_HOOK_REGION_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/shared_region.h"

/* Maps the region at `path`, creating and initialising it when needed. Returns 0, or -1 with a
 * message in `error`. */
int region_open(const char* path, char* error, size_t error_size);

/* The mapped region, or NULL before region_open succeeded. */
struct tessera_region* region_get(void);

/* Takes a slot for this process (once; again after fork). Returns the slot index or -1 when the
 * region has no free slot. Starts the reaper thread. */
int region_slot(void);

/* Adds `bytes` to device `index`'s usage unless that would exceed `limit` (0 = no limit).
 * Returns 0, or -1 when it does not fit even after releasing dead processes. */
int region_charge(int index, uint64_t bytes, uint64_t limit);

/* Gives back a charge made by region_charge. */
void region_uncharge(int index, uint64_t bytes);

/* Current usage of device `index` (0 without a region). */
uint64_t region_used(int index);

/* Records what this process knows about device `index` for readers of the region. */
void region_publish_device(int index, uint64_t limit, uint32_t cores);

/* Releases the charges of dead processes; returns how many slots it freed. */
int region_sweep(void);

/* Has the reaper thread (started with this process's slot) call `fn` every time it wakes, about
 * every 200 ms, whether or not it sweeps. */
void region_each_round(void (*fn)(void));

void region_reset_in_child(void);

#endif /* TESSERA_HOOK_REGION_H_ */
