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

namespace {

constexpr uint64_t kBlockedPollNs = 100'000;  // a launch behind a waiting kernel retries this often

// Puts `duration` of `s`'s work on its device's timeline, not before `not_before`: sets *end, or
// *retry_at when the device's segment ring is full.
CUresult Place(Driver& d, Stream* s, uint64_t duration, uint64_t not_before, uint64_t now,
               uint64_t* end, uint64_t* retry_at) {
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
  uint64_t start = 0;
  if (!Enqueue(dev, pid_stat, not_before, duration, now, &start, end)) {
    *retry_at = OldestSegmentEnd(dev, now);
  }
  return CUDA_SUCCESS;
}

// Signal `signal` (K + 1) is set at `at`: every `wait_<K>` kernel of the process runs from then.
void ReleaseWaits(Driver& d, uint64_t signal, uint64_t at) {
  auto release = [&](Stream* s) {
    if (s->blocked_on != signal) return;
    s->blocked_on = 0;
    uint64_t end = 0, retry_at = 0;
    uint64_t now = NowNs();
    Place(d, s, kDefaultKernelNs, std::max(s->not_before_ns, at), now, &end, &retry_at);
    if (retry_at != 0 || end == 0) end = std::max(now, at) + kDefaultKernelNs;  // ring full
    s->last_end_ns = end;
    s->pending_ends.push_back(end);
    for (Event* e : d.events) {
      if (e->blocked == s) {
        e->blocked = nullptr;
        e->time_ns = end;
      }
    }
  };
  for (Context* ctx : d.contexts) {
    release(&ctx->legacy);
    for (Stream* s : ctx->streams) release(s);
    for (auto& [tid, s] : ctx->per_thread) release(s.get());
  }
}

}  // namespace

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
  if (s->blocked_on != 0) {
    *retry_at = now + kBlockedPollNs;
    return CUDA_SUCCESS;
  }
  while (!s->pending_ends.empty() && s->pending_ends.front() <= now) s->pending_ends.pop_front();
  if (s->pending_ends.size() >= kMaxPendingPerStream) {
    *retry_at = s->pending_ends.front();
    return CUDA_SUCCESS;
  }
  const KernelTiming& timing = f->timing;
  uint64_t not_before = s->not_before_ns;
  if (timing.waits_for != 0) {
    auto signal = d.signals.find(timing.waits_for);
    if (signal == d.signals.end()) {
      s->blocked_on = timing.waits_for;
      s->last_end_ns = kBlockedNs;
      return CUDA_SUCCESS;
    }
    not_before = std::max(not_before, signal->second);
  }
  uint64_t end = 0;
  uint64_t duration =
      KernelDurationNs(timing, shape.Blocks(), d.state->file().devices[s->ctx->device].sms);
  if (CUresult r = Place(d, s, duration, not_before, now, &end, retry_at); r != CUDA_SUCCESS) {
    return r;
  }
  if (*retry_at != 0) return CUDA_SUCCESS;
  s->last_end_ns = end;
  s->pending_ends.push_back(end);
  if (timing.signals != 0 && d.signals.emplace(timing.signals, end).second) {
    ReleaseWaits(d, timing.signals, end);
  }
  return CUDA_SUCCESS;
}

}  // namespace simgpu
