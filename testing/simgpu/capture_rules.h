// The calls a stream capture forbids, as the driver documents them for cuStreamBeginCapture's
// modes and cuThreadExchangeStreamCaptureMode: a thread whose own mode is GLOBAL may not make a
// potentially unsafe call (simgpu: a synchronisation or a query of a stream, an event or a
// context) while it has a capture of its own not begun RELAXED, or while another thread has a
// capture begun GLOBAL; THREAD_LOCAL considers its own captures only; RELAXED none. Such a call
// fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the captures that forbade it.
//
// Thread-safety: needs Driver::mu.
#pragma once

#include "driver_state.h"

namespace simgpu {

// CUDA_SUCCESS when the calling thread may make a potentially unsafe call now; otherwise
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, every capture that forbids it being invalidated.
CUresult CheckUnsafeCall(Driver& d);

}  // namespace simgpu
