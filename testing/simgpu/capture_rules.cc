#include "capture_rules.h"

#include <unistd.h>

namespace simgpu {

CUresult CheckUnsafeCall(Driver& d) {
  CUstreamCaptureMode mine = ThisThread().capture_mode;
  if (mine == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  pid_t self = gettid();
  bool forbidden = false;
  auto check = [&](Stream* s) {
    if (s->capture == nullptr || s->capture_invalidated) return;
    bool own = s->capture_thread == self && s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    bool other = s->capture_thread != self && s->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                 mine == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (own || other) {
      s->capture_invalidated = true;
      forbidden = true;
    }
  };
  for (Context* ctx : d.contexts) {
    for (Stream* s : ctx->streams) check(s);
    for (auto& [tid, s] : ctx->per_thread) check(s.get());
  }
  return forbidden ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

}  // namespace simgpu

extern "C" CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (mode == nullptr ||
      (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
       *mode != CU_STREAM_CAPTURE_MODE_RELAXED)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUstreamCaptureMode previous = simgpu::ThisThread().capture_mode;
  simgpu::ThisThread().capture_mode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}
