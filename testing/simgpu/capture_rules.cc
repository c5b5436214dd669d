#include "capture_rules.h"

#include <unistd.h>

namespace simgpu {
namespace {

// Calls `fn` for every stream of `ctx` that may capture (the legacy stream never does).
template <typename Fn>
void ForEachStream(const Context& ctx, Fn fn) {
  for (Stream* s : ctx.streams) fn(s);
  for (const auto& [tid, s] : ctx.per_thread) fn(s.get());
}

bool Blocking(const Stream& s) {
  return (s.flags & CU_STREAM_NON_BLOCKING) == 0;
}

}  // namespace

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
  for (Context* ctx : d.contexts) ForEachStream(*ctx, check);
  return forbidden ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult CheckStreamUse(Stream& s) {
  if (s.ctx->sticky_error != CUDA_SUCCESS) return s.ctx->sticky_error;
  if (s.capture != nullptr && s.capture_invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (&s != &s.ctx->legacy || !LegacyBlockedByCapture(*s.ctx)) return CUDA_SUCCESS;
  ForEachStream(*s.ctx, [](Stream* other) {
    if (other->capture != nullptr && Blocking(*other)) other->capture_invalidated = true;
  });
  return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

bool LegacyBlockedByCapture(const Context& ctx) {
  bool blocked = false;
  ForEachStream(ctx, [&](const Stream* s) { blocked |= s->capture != nullptr && Blocking(*s); });
  return blocked;
}

CUresult CheckEndingThread(const Stream& s) {
  if (s.capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED || s.capture_thread == gettid()) {
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
}

bool CapturingInto(const Driver& d, const Graph* g) {
  bool found = false;
  for (const Context* ctx : d.contexts) {
    ForEachStream(*ctx, [&](const Stream* s) { found |= s->capture == g; });
  }
  return found;
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
