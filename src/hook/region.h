/* This process's view of the shared region (abi/shared_region.h): opening or creating it, taking
 * this process's slot, charging and releasing memory per device, and freeing dead processes' slots.
 *
 * region_charge never takes a device's total past its limit; it sweeps dead processes once before
 * it refuses. Charges and releases take no lock; only taking and freeing a slot takes the region's
 * robust mutex, so a stopped holder delays new processes (up to a second each, then they are
 * refused), never running ones. A process never gives its slot back itself: a sweep frees a dead
 * process's slot and charge, before a refusal or from the reaper thread region_slot starts.
 * Thread-safety: all functions are thread-safe. After fork() the child takes a
 * descriptor and a slot of its own (at_fork.h).
 *
 *   if (region_open(path, error, sizeof(error)) != 0) return -1;  (error says why)
 *   if (region_charge(index, bytes, limit) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
 *   region_uncharge(index, bytes);                                (when the driver freed it)
 *   region_spill_charge / region_spill_uncharge: the part of a charge served from host memory.
 *
 * Why (liveness locks, sweeps, issue 28): docs/in-container-library.md, "The shared region". */
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

/* Records that `bytes` of this process's charge on device `index` (made by region_charge) are
 * served from host memory, unless the container's spilled bytes on the device would exceed `cap`
 * (the limits file's spill.<i>). Returns 0, or -1 when they would (or without a slot). */
int region_spill_charge(int index, uint64_t bytes, uint64_t cap);

/* Gives back a record made by region_spill_charge (call before region_uncharge of its bytes). */
void region_spill_uncharge(int index, uint64_t bytes);

/* The container's bytes on device `index` served from host memory (0 without a region). */
uint64_t region_spilled(int index);

/* Current usage of device `index`, device and host memory together (0 without a region). */
uint64_t region_used(int index);

/* Records what this process knows about device `index` for readers of the region. */
void region_publish_device(int index, uint64_t limit, uint32_t cores);

/* Releases the charges of dead processes; returns how many slots it freed. */
int region_sweep(void);

/* Has the reaper thread (started with this process's slot) call `fn` every time it wakes, about
 * every 200 ms, whether or not it sweeps. Up to REGION_ROUNDS functions, called in the order they
 * were first given; giving one again changes nothing. */
#define REGION_ROUNDS 4
void region_each_round(void (*fn)(void));

/* Whether this process's reaper thread runs (it took a slot and the thread could be created). */
int region_reaper_running(void);

/* Has region_slot call `fn` once it took this process's slot (in the thread that took it, before
 * that thread's charge): a process that took none has no reaper, and so nothing yet noticed what
 * changed since it started. One function; the last one given. */
void region_on_slot(void (*fn)(void));

#endif /* TESSERA_HOOK_REGION_H_ */
