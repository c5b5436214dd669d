// Work on streams: which kernel a stream, a context or the legacy default stream is done after,
// whether that kernel has ended, and queuing one kernel on the device timeline. Needs Driver::mu
// held (the waits themselves happen after the caller has released it).
#pragma once

#include <cstdint>

#include "driver_state.h"

namespace simgpu {

// The kernel after whose end all work queued on `s` so far is done (seq 0: none; kBlockedSeq
// while a `wait_<K>` kernel waits). A context's kernels end in launch order, so the latest seq
// of several of its streams is the one to wait for.
KernelRef StreamLast(const Stream& s);

// The legacy default stream also waits for the context's blocking streams.
KernelRef LegacyLast(const Context& ctx);

// Every stream of the context.
KernelRef ContextLast(const Context& ctx);

// What synchronising `s` waits for: LegacyLast for the legacy stream, else StreamLast.
KernelRef SyncPoint(const Stream& s);

// Whether `work` has ended by now (seq 0: yes; kBlockedSeq: no). Takes the state lock.
bool WorkEnded(Driver& d, KernelRef work);

// Whether the work before a recorded event has completed; when it has, sets ev->time_ns (or
// ev->time_lost). Takes the state lock while the time is not known yet.
bool EventCompleted(Driver& d, Event* ev);

// Queues one kernel of `f` of shape `shape` on `s`: records it into the graph when `s` is
// capturing, otherwise puts it on the device timeline. When the stream already has
// kMaxPendingPerStream launches queued, the device's ring is full, or the launch would wait for
// more than one unfinished kernel of other contexts, sets *retry_at and returns CUDA_SUCCESS
// without queuing: the caller releases mu, waits until then and calls again.
CUresult QueueKernel(Driver& d, Stream* s, Function* f, const LaunchShape& shape,
                     uint64_t* retry_at);

}  // namespace simgpu
