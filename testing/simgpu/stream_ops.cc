#include "stream_ops.h"

#include <algorithm>

#include "clock.h"
#include "timeline.h"

namespace simgpu {

uint64_t StreamDoneAt(const Stream& s) {
  return s.last_end_ns;
}

uint64_t LegacyDoneAt(const Context& ctx) {
  uint64_t t = ctx.legacy.last_end_ns;
  for (const Stream* s : ctx.streams) {
    if ((s->flags & CU_STREAM_NON_BLOCKING) == 0) t = std::max(t, s->last_end_ns);
  }
  return t;
}

uint64_t ContextDoneAt(const Context& ctx) {
  uint64_t t = LegacyDoneAt(ctx);
  for (const Stream* s : ctx.streams) t = std::max(t, s->last_end_ns);
  for (const auto& [tid, s] : ctx.per_thread) t = std::max(t, s->last_end_ns);
  return t;
}

uint64_t SyncPoint(const Stream& s) {
  return &s == &s.ctx->legacy ? LegacyDoneAt(*s.ctx) : StreamDoneAt(s);
}

CUresult QueueKernel(Driver& d, Stream* s, Function* f, const LaunchShape& shape,
                     uint64_t* retry_at) {
  *retry_at = 0;
  if (s->capture != nullptr) {
    auto node = std::make_unique<KernelNode>();
    node->function = f;
    node->shape = shape;
    d.nodes.insert(node.get());
    s->capture->nodes.push_back(std::move(node));
    return CUDA_SUCCESS;
  }
  uint64_t now = NowNs();
  while (!s->pending_ends.empty() && s->pending_ends.front() <= now) s->pending_ends.pop_front();
  if (s->pending_ends.size() >= kMaxPendingPerStream) {
    *retry_at = s->pending_ends.front();
    return CUDA_SUCCESS;
  }
  int device = s->ctx->device;
  SharedState::Lock lock(*d.state);
  DeviceState& dev = d.state->file().devices[device];
  if (dev.removed) return CUDA_ERROR_LAUNCH_FAILED;
  Settle(dev, now);
  auto cached = d.pid_stat.find(device);
  int pid_stat = cached != d.pid_stat.end() ? cached->second : -1;
  int pid = d.state->SelfPid(lock);
  if (pid != 0 && (pid_stat < 0 || dev.pids[pid_stat].pid != pid)) {
    pid_stat = PidStatIndex(dev, pid, [&](int p) { return d.state->PidAlive(lock, p); });
    d.pid_stat[device] = pid_stat;
  }
  uint64_t start = 0, end = 0;
  uint64_t duration = KernelDurationNs(f->timing, shape.Blocks(), dev.sms);
  if (!Enqueue(dev, pid_stat, s->not_before_ns, duration, now, &start, &end)) {
    *retry_at = OldestSegmentEnd(dev, now);
    return CUDA_SUCCESS;
  }
  s->last_end_ns = end;
  s->pending_ends.push_back(end);
  return CUDA_SUCCESS;
}

}  // namespace simgpu
