// Streams, events and their synchronisation. An event stands for the last kernel queued before it
// on its stream; it completes when that kernel ends on the device timeline, and waits sleep until
// then (stream_ops.h).
#include "capture_rules.h"
#include "clock.h"
#include "driver_state.h"
#include "ipc_ops.h"
#include "pool_ops.h"
#include "stream_ops.h"

using namespace simgpu;

namespace {

CUresult NewStream(CUstream* phStream, unsigned flags) {
  if (phStream == nullptr || (flags & ~1u) != 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  auto* s = new Stream();
  s->ctx = ctx;
  s->flags = flags;
  s->lane = d.next_lane++;
  ctx->streams.insert(s);
  d.streams.insert(s);
  *phStream = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}

CUresult SyncStream(CUstream h, bool per_thread) {
  Driver& d = TheDriver();
  return WaitForPoint([&](KernelRef* until) {
    Stream* s = nullptr;
    if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
    if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
    if (s->capture != nullptr) {
      s->capture_invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
    *until = SyncPoint(d, *s);
    PoolsAtSync(d);
    return CUDA_SUCCESS;
  });
}

CUresult QueryStream(CUstream h, bool per_thread) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
  if (s->capture == nullptr) {
    if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
  }
  return WorkEnded(d, SyncPoint(d, *s)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult WaitEvent(CUstream h, CUevent e, unsigned flags, bool per_thread) {
  if (flags != 0 && flags != 1 /* CU_EVENT_WAIT_EXTERNAL */) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
  auto* ev = reinterpret_cast<Event*>(e);
  if (d.events.count(ev) == 0) return CUDA_ERROR_INVALID_HANDLE;
  IpcEventRefresh(d, ev);
  // On a device that runs a context's kernels in launch order, only another context's work is
  // waited for; where its streams run together, its other streams' work too. An interprocess
  // event's last record may be another process's.
  bool in_order =
      ev->ipc_id == 0 && ev->ctx == s->ctx && ev->blocked == nullptr &&
      (ev->stream_lane == s->lane || !d.state->file().devices[s->ctx->device].streams_concurrent);
  if (!ev->recorded || in_order || EventCompleted(d, ev)) return CUDA_SUCCESS;
  KernelRef work = ev->blocked != nullptr ? KernelRef{ev->ctx->device, kBlockedSeq} : ev->work;
  for (const KernelRef& w : s->waits) {
    if (w.device == work.device && w.seq == work.seq) return CUDA_SUCCESS;
  }
  s->waits.push_back(work);
  return CUDA_SUCCESS;
}

CUresult HostFunc(CUstream h, CUhostFn fn, void* data, bool per_thread) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  KernelRef until;
  SharedState* state = nullptr;
  {
    std::lock_guard<std::mutex> guard(d.mu);
    Stream* s = nullptr;
    if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
    if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
    if (s->capture != nullptr) {
      s->capture_invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    until = StreamLast(*s);
    state = d.state;
  }
  // Runs in stream order, on the calling thread, once the stream's earlier work has finished.
  WaitForKernel(*state, until);
  fn(data);
  return CUDA_SUCCESS;
}

CUresult StreamCtx(CUstream h, CUcontext* pctx, bool per_thread) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
  *pctx = reinterpret_cast<CUcontext>(s->ctx);
  return CUDA_SUCCESS;
}

CUresult RecordEvent(CUevent e, CUstream h, bool per_thread) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
  auto* ev = reinterpret_cast<Event*>(e);
  if (d.events.count(ev) == 0 || ev->ctx != s->ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture != nullptr) return CUDA_SUCCESS;  // event nodes take no device time
  ev->recorded = true;
  ev->stream_lane = s->lane;
  ev->recorded_ns = NowNs();
  ev->work = StampPoint(d, *s);
  ev->time_ns = 0;
  ev->time_lost = false;
  ev->blocked = s->blocked_on != 0 ? s : nullptr;
  if (ev->blocked != nullptr) ev->work = KernelRef{};
  IpcEventPublish(d, ev);
  return CUDA_SUCCESS;
}

CUresult Elapsed(float* ms, CUevent start, CUevent end) {
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* a = reinterpret_cast<Event*>(start);
  auto* b = reinterpret_cast<Event*>(end);
  if (d.events.count(a) == 0 || d.events.count(b) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->recorded || !b->recorded || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (!EventCompleted(d, a) || !EventCompleted(d, b)) return CUDA_ERROR_NOT_READY;
  // An event whose kernel ended more than kEndCapacity kernels of its device ago, unasked in
  // between, has lost its time.
  if (a->time_lost || b->time_lost) return CUDA_ERROR_INVALID_HANDLE;
  *ms =
      static_cast<float>((static_cast<double>(b->time_ns) - static_cast<double>(a->time_ns)) / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return NewStream(phStream, Flags);
}

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int) {
  return NewStream(phStream, flags);
}

CUresult cuStreamDestroy_v2(CUstream h) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* s = reinterpret_cast<Stream*>(h);
  if (d.streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  // Work already queued still runs: it is on the device timeline.
  s->ctx->streams.erase(s);
  d.streams.erase(s);
  delete s;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream h) {
  return SyncStream(h, false);
}
CUresult cuStreamSynchronize_ptsz(CUstream h) {
  return SyncStream(h, true);
}
CUresult cuStreamQuery(CUstream h) {
  return QueryStream(h, false);
}
CUresult cuStreamQuery_ptsz(CUstream h) {
  return QueryStream(h, true);
}
CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags) {
  return WaitEvent(h, e, flags, false);
}
CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int flags) {
  return WaitEvent(h, e, flags, true);
}
CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void* data) {
  return HostFunc(h, fn, data, false);
}
CUresult cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void* data) {
  return HostFunc(h, fn, data, true);
}
CUresult cuStreamGetCtx(CUstream h, CUcontext* pctx) {
  return StreamCtx(h, pctx, false);
}
CUresult cuStreamGetCtx_ptsz(CUstream h, CUcontext* pctx) {
  return StreamCtx(h, pctx, true);
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  if (phEvent == nullptr || (Flags & ~0x7u) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  auto* e = new Event();
  e->ctx = ctx;
  e->flags = Flags;
  d.events.insert(e);
  *phEvent = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream h) {
  return RecordEvent(e, h, false);
}
CUresult cuEventRecord_ptsz(CUevent e, CUstream h) {
  return RecordEvent(e, h, true);
}

CUresult cuEventQuery(CUevent e) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* ev = reinterpret_cast<Event*>(e);
  if (d.events.count(ev) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (ev->ctx->sticky_error != CUDA_SUCCESS) return ev->ctx->sticky_error;
  if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
  IpcEventRefresh(d, ev);
  return EventCompleted(d, ev) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent e) {
  Driver& d = TheDriver();
  return WaitForPoint([&](KernelRef* until) {
    if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
    auto* ev = reinterpret_cast<Event*>(e);
    if (d.events.count(ev) == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (ev->ctx->sticky_error != CUDA_SUCCESS) return ev->ctx->sticky_error;
    if (CUresult r = CheckUnsafeCall(d); r != CUDA_SUCCESS) return r;
    IpcEventRefresh(d, ev);
    if (ev->blocked != nullptr) {
      *until = KernelRef{ev->ctx->device, kBlockedSeq};
    } else if (ev->recorded) {
      *until = ev->work;
    }
    PoolsAtSync(d);
    return CUDA_SUCCESS;
  });
}

CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return Elapsed(ms, start, end);
}
CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  return Elapsed(ms, start, end);
}

CUresult cuEventDestroy_v2(CUevent e) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* ev = reinterpret_cast<Event*>(e);
  if (d.events.count(ev) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (ev->ipc_owner) IpcExportDrop(d, ev->ipc_id);
  d.events.erase(ev);
  delete ev;
  return CUDA_SUCCESS;
}

}  // extern "C"
