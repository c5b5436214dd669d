// Stream-ordered memory pools, as the real driver keeps them: a pool reserves device memory in
// chunks (2 MiB, shared by allocations smaller than that; a larger allocation gets a chunk of its
// own size rounded to the granule), carves allocations from them, and keeps the chunks after the
// allocations are freed. Empty chunks go back to the device while the pool holds more than its
// release threshold (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, default 0) at the next stream, event or
// context synchronisation, or on cuMemPoolTrimTo. A host pool reserves host memory and charges
// no device memory. All functions need Driver::mu.
#pragma once

#include <cstdint>

#include "driver_state.h"

namespace simgpu {

// Carves `bytes` from `pool` for `ctx` (the context that owns the allocation), reserving a new
// chunk when none has room. CUDA_ERROR_OUT_OF_MEMORY when the device lacks the chunk.
CUresult PoolAllocate(Driver& d, Pool* pool, Context* ctx, size_t bytes, CUdeviceptr* out);

// Returns a pool allocation to its pool (the chunk stays reserved). Erases it from d.allocations.
void PoolFree(Driver& d, std::map<uint64_t, Allocation>::iterator it);

// Gives empty chunks of `pool` back until it holds at most `keep` bytes (or has no empty chunk).
void PoolTrim(Driver& d, Pool* pool, uint64_t keep);

// A synchronisation: every pool trims to its release threshold.
void PoolsAtSync(Driver& d);

// cuMemPoolDestroy: empty chunks go now, the rest with their last allocation.
void PoolDestroy(Driver& d, Pool* pool);

}  // namespace simgpu
