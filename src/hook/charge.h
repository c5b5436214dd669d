/* Reservations: the step every allocation hook takes before calling the driver. A reservation
 * charges the rounded size to the shared region (refused over the limit); it is then either
 * committed under the new handle (alloc_map) or rolled back when the driver call fails.
 *
 * Thread-safety: the functions are thread-safe; a struct charge belongs to one call. */
#ifndef TESSERA_HOOK_CHARGE_H_
#define TESSERA_HOOK_CHARGE_H_

#include <stdint.h>

#include "abi/cuda_driver.h"

struct charge {
  int active; /* something was reserved */
  int index;  /* container device index */
  uint64_t bytes;
  uint64_t context; /* the context that owns the allocation (0: none) */
};

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
 * it back when it failed. Call charge_take first, then the driver, then this. */
int charge_take(int kind, uint64_t key, struct charge* c);
CUresult charge_release(CUresult rc, struct charge* c, int kind, uint64_t key);

/* Whether hooks should fail every call (malformed limits). */
int charge_failed_mode(void);

#endif /* TESSERA_HOOK_CHARGE_H_ */
