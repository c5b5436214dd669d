// Work on streams: when a stream, a context or the legacy default stream is done, and queuing one
// kernel on the device timeline. Needs Driver::mu held (the waits themselves happen after the
// caller has released it).
#pragma once

#include <cstdint>

#include "driver_state.h"

namespace simgpu {

// When all work queued on `s` so far has finished (CLOCK_MONOTONIC ns).
uint64_t StreamDoneAt(const Stream& s);

// The legacy default stream also waits for the context's blocking streams.
uint64_t LegacyDoneAt(const Context& ctx);

// Every stream of the context.
uint64_t ContextDoneAt(const Context& ctx);

// What synchronising `s` waits for: LegacyDoneAt for the legacy stream, else StreamDoneAt.
uint64_t SyncPoint(const Stream& s);

// Queues one kernel of `f` of shape `shape` on `s`: records it into the graph when `s` is
// capturing, otherwise puts it on the device timeline. When the stream already has
// kMaxPendingPerStream launches queued, or the device's segment ring is full, sets *retry_at and
// returns CUDA_SUCCESS without queuing: the caller releases mu, waits until then and calls again.
CUresult QueueKernel(Driver& d, Stream* s, Function* f, const LaunchShape& shape,
                     uint64_t* retry_at);

}  // namespace simgpu
