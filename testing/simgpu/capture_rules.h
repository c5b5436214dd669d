// The calls a stream capture forbids, as the driver documents them for cuStreamBeginCapture's
// modes, cuThreadExchangeStreamCaptureMode and the programming guide's "Prohibited and Unhandled
// Operations":
//  - Potentially unsafe calls (simgpu: a synchronisation or a query of a stream, an event or a
//    context, the synchronous allocations and frees, and reading or writing a pool's attribute):
//    a thread whose own mode is GLOBAL may
//    not make one while it has a capture of its own not begun RELAXED, or while another thread
//    has a capture begun GLOBAL; THREAD_LOCAL considers its own captures only; RELAXED none. Such
//    a call fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the captures that
//    forbade it.
//  - The legacy default stream while a blocking stream of its context (created without
//    CU_STREAM_NON_BLOCKING, or a per-thread default stream) is capturing: any use would depend on
//    the capture, and fails with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, invalidating those captures
//    (cuStreamIsCapturing answers the same error but invalidates nothing).
//  - A stream whose capture was invalidated: work on it fails with
//    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED until cuStreamEndCapture, which answers the same.
//  - cuStreamEndCapture of a capture not begun RELAXED, from another thread than the one that
//    began it: CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD (the capture goes on: the driver does not
//    say what becomes of it).
//
// Thread-safety: every function needs Driver::mu.
#pragma once

#include "driver_state.h"

namespace simgpu {

// CUDA_SUCCESS when the calling thread may make a potentially unsafe call now; otherwise
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, every capture that forbids it being invalidated.
CUresult CheckUnsafeCall(Driver& d);

// CUDA_SUCCESS when work may be queued on `s`, or `s` synchronised or queried, as far as captures
// go; otherwise the sticky error of s's context (Context::sticky_error),
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (s's own capture was invalidated) or
// CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (s is the legacy stream and a blocking stream of its context
// is capturing; those captures are invalidated).
CUresult CheckStreamUse(Stream& s);

// Whether a blocking stream of `ctx` is capturing (the legacy stream is then unusable).
bool LegacyBlockedByCapture(const Context& ctx);

// CUDA_SUCCESS when the calling thread may end `s`'s capture, else
// CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD.
CUresult CheckEndingThread(const Stream& s);

// Whether a stream of the process is capturing into `g`.
bool CapturingInto(const Driver& d, const Graph* g);

}  // namespace simgpu
