/* Stream-ordered memory pools: the charge of a pool is the memory it holds (its reserved size,
 * CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), on the pool's device, whatever is allocated from it; host
 * pools charge nothing. An allocation reserves the growth it may cause (the request less what the
 * pool holds unused) before the driver's call and settles to the pool's reserved size after it; a
 * free changes nothing. The charge follows the pool down when this process next looks (its next
 * allocation from the pool, cuMemPoolTrimTo, a memory query, a context destroyed or reset, or
 * before an allocation is refused): until then it may lag above what the driver holds, never below.
 * Thread-safety: every function is thread-safe (one process-local mutex, held across the driver's
 * call of an allocation so that the pool's growth is this call's). After fork() the child starts
 * with an empty table (at_fork.h).
 *
 *   pool_note(pool, dev);                   (when a pool's device is learnt)
 *   CUresult rc = pool_alloc(&call, dev);   (instead of the driver's cuMemAllocAsync)
 *
 * Why: docs/in-container-library.md, "What is enforced" (stream-ordered pools). */
#ifndef TESSERA_HOOK_POOL_CHARGE_H_
#define TESSERA_HOOK_POOL_CHARGE_H_

#include <stdint.h>

#include "abi/cuda_driver.h"

/* The driver call of an allocation from a pool, with its arguments bound. */
struct pool_alloc_call {
  CUresult (*call)(const struct pool_alloc_call* k);
  void* real;
  CUdeviceptr* dptr;
  size_t bytes;
  CUmemoryPool pool;
  CUstream stream;
};

/* Records where a pool lives: CUDA device `dev`, or the host (dev < 0). */
void pool_note(CUmemoryPool pool, CUdevice dev);

/* Makes the allocation `k` from k->pool on device `dev` (where an unknown pool is taken to live),
 * charging the pool's growth. Returns the driver's answer, CUDA_ERROR_OUT_OF_MEMORY when the
 * growth does not fit the limit (the allocation is then undone). */
CUresult pool_alloc(const struct pool_alloc_call* k, CUdevice dev);

/* Settles every pool's charge to what it holds now (pools the driver no longer knows: nothing). */
void pool_refresh_all(void);

/* Whether `pool` has allocations outstanding (asked before cuMemPoolDestroy; 1 when unknown). */
int pool_outstanding(CUmemoryPool pool);

/* cuMemPoolDestroy succeeded: without allocations outstanding the pool's memory is gone; with
 * some, the driver frees it with the last of them, which the library cannot see: its charge
 * stays until the process exits (never less than the driver holds). */
void pool_destroyed(CUmemoryPool pool, int outstanding);

#endif /* TESSERA_HOOK_POOL_CHARGE_H_ */
