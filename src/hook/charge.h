/* Reservations: the step every allocation hook takes before calling the driver. A reservation
 * charges the rounded size to the shared region (refused over the limit); it is then either
 * committed under the new handle (alloc_map) or rolled back when the driver call fails.
 *
 * Thread-safety: the functions are thread-safe; a struct charge belongs to one call. */
#ifndef TESSERA_HOOK_CHARGE_H_
#define TESSERA_HOOK_CHARGE_H_

#include <stdint.h>

#include "abi/cuda_driver.h"
#include "abi/limits_format.h"

/* A charge's account, as the charge and the tables of allocations (alloc_map, vmm_map) record it:
 * the container device index, plus TESSERA_MAX_DEVICES when the allocation is served from host
 * memory (spill.h, which marks it so once the allocation is made). */
#define CHARGE_ACCOUNTS (2 * TESSERA_MAX_DEVICES)

struct charge {
  int active; /* something was reserved */
  int index;  /* the account: the container device index, unless spilled (above) */
  uint64_t bytes;
  uint64_t context; /* the context that owns the allocation (0: none) */
};

/* Whether a charge that charge_take found was served from host memory. */
static inline int charge_spilled(const struct charge* c) {
  return c->active && c->index >= TESSERA_MAX_DEVICES;
}

/* Gives back `bytes` charged to `account` (the driver freed them): the spilled part first. */
void charge_give_back(int account, uint64_t bytes);

/* CUDA_SUCCESS when the call may go on (c->active says whether it was charged),
 * CUDA_ERROR_OUT_OF_MEMORY over the limit, CUDA_ERROR_NOT_INITIALIZED when the library failed
 * (malformed limits). `round` selects rounding up to the device's granularity. */
CUresult charge_reserve(CUdevice dev, uint64_t bytes, int round, struct charge* c);

/* The same on the device of the current context, which then owns the allocation; no charge
 * without a current context. */
CUresult charge_reserve_current(uint64_t bytes, int round, struct charge* c);

/* Brings the charges of stream-ordered pools and graph memory down to what they hold now (they
 * may hold less than was charged). */
void charge_refresh_held(void);

/* Releases every allocation the driver freed with `context` (destroyed or reset). */
void charge_release_context(uint64_t context);

/* Adds `extra` bytes to a reservation; CUDA_ERROR_OUT_OF_MEMORY when it does not fit. */
CUresult charge_grow(struct charge* c, uint64_t extra);

/* Gives part of a reservation back. */
void charge_shrink(struct charge* c, uint64_t less);

/* After the driver call: records the charge under (kind, key) when `rc` is success, or rolls it
 * back. Returns rc. */
CUresult charge_finish(CUresult rc, struct charge* c, int kind, uint64_t key);

/* After a successful driver call that may have been made by several threads at once (the first
 * retain of a primary context): records the charge under (kind, key) unless another thread did
 * first, in which case the charge is rolled back. Returns 0 when recorded, 1 when rolled back. */
int charge_finish_first(struct charge* c, int kind, uint64_t key);

/* Releases the charge recorded under (kind, key) when the driver's free succeeded (rc), or puts
 * it back when it failed. Call charge_take first, then the driver, then this. A spilled charge
 * (charge_spilled) is released by spill_mem_free, which calls this only to put it back. */
int charge_take(int kind, uint64_t key, struct charge* c);
CUresult charge_release(CUresult rc, struct charge* c, int kind, uint64_t key);

/* Whether hooks should fail every call (malformed limits). */
int charge_failed_mode(void);

#endif /* TESSERA_HOOK_CHARGE_H_ */
