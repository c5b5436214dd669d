// Work on streams: which kernel a stream, a context or the legacy default stream is done after,
// whether that kernel has ended, and queuing one kernel on the device timeline. Needs Driver::mu
// held (the waits themselves happen after the caller has released it).
#pragma once

#include <cstdint>

#include "driver_state.h"

namespace simgpu {

// The kernel after whose end all work queued on `s` so far is done (seq 0: none; kBlockedSeq
// while a `wait_<K>` kernel waits). A stream's kernels end in launch order.
KernelRef StreamLast(const Stream& s);

// The legacy default stream also waits for the context's blocking streams. When several streams
// have unfinished work on a device that runs a context's streams together, this queues a join
// point (timeline.h) and returns it; takes the state lock then.
KernelRef LegacyLast(Driver& d, const Context& ctx);

// Every stream of the context (as LegacyLast).
KernelRef ContextLast(Driver& d, const Context& ctx);

// What synchronising `s` waits for: LegacyLast for the legacy stream, else StreamLast.
KernelRef SyncPoint(Driver& d, const Stream& s);

// What an event recorded on `s` now completes after: SyncPoint, or, when the stream has no
// unfinished work, a marker that takes no device time queued in the stream's lane: a real GPU
// writes an event's stamp as it processes the context's work, and a time-sliced device does
// that only in the context's slice (at once when the device is free). Takes the state lock.
KernelRef StampPoint(Driver& d, Stream& s);

// Whether `work` has ended by now (seq 0: yes; kBlockedSeq: no). Takes the state lock.
bool WorkEnded(Driver& d, KernelRef work);

// Whether the work before a recorded event has completed; when it has, sets ev->time_ns (or
// ev->time_lost). Takes the state lock while the time is not known yet.
bool EventCompleted(Driver& d, Event* ev);

// Queues one kernel of `f` of shape `shape` on `s`: records it into the graph when `s` is
// capturing, otherwise puts it on the device timeline. When the stream already has
// kMaxPendingPerStream launches queued, the device's ring is full, or the launch would wait for
// more than one unfinished kernel of other contexts, sets *retry_at and returns CUDA_SUCCESS
// without queuing: the caller releases mu, waits until then and calls again. A `touch_<N>ns`
// kernel whose range its device cannot address (AddressableByKernel) is not queued: it sets its
// context's sticky error and returns CUDA_ERROR_ILLEGAL_ADDRESS.
CUresult QueueKernel(Driver& d, Stream* s, Function* f, const LaunchShape& shape,
                     uint64_t* retry_at);

}  // namespace simgpu
