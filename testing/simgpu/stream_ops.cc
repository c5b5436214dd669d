#include "stream_ops.h"

#include <algorithm>
#include <vector>

#include "clock.h"
#include "timeline.h"

namespace simgpu {

KernelRef StreamLast(const Stream& s) {
  return KernelRef{s.ctx->device, s.last_seq};
}

KernelRef LegacyLast(const Context& ctx) {
  uint64_t seq = ctx.legacy.last_seq;
  for (const Stream* s : ctx.streams) {
    if ((s->flags & CU_STREAM_NON_BLOCKING) == 0) seq = std::max(seq, s->last_seq);
  }
  return KernelRef{ctx.device, seq};
}

KernelRef ContextLast(const Context& ctx) {
  uint64_t seq = LegacyLast(ctx).seq;
  for (const Stream* s : ctx.streams) seq = std::max(seq, s->last_seq);
  for (const auto& [tid, s] : ctx.per_thread) seq = std::max(seq, s->last_seq);
  return KernelRef{ctx.device, seq};
}

KernelRef SyncPoint(const Stream& s) {
  return &s == &s.ctx->legacy ? LegacyLast(*s.ctx) : StreamLast(s);
}

namespace {

constexpr uint64_t kBlockedPollNs = 100'000;  // a launch that cannot be queued retries this often

// Whether `work` has ended; the state lock is held and the device advanced.
bool Ended(const StateFile& file, KernelRef work, uint64_t* end_ns) {
  if (work.seq == 0) return true;
  if (work.seq == kBlockedSeq) return false;
  return KernelEnded(file.devices[work.device], work.seq, end_ns);
}

// This process's PID table entry on `device`, looked up once. The state lock is held.
int PidStatOf(Driver& d, const SharedState::Lock& lock, DeviceState& dev, int device) {
  auto cached = d.pid_stat.find(device);
  int pid_stat = cached != d.pid_stat.end() ? cached->second : -1;
  int pid = d.state->SelfPid(lock);
  if (pid != 0 && (pid_stat < 0 || dev.pids[pid_stat].pid != pid)) {
    pid_stat = PidStatIndex(dev, pid, [&](int p) { return d.state->PidAlive(lock, p); });
    d.pid_stat[device] = pid_stat;
  }
  return pid_stat;
}

// Signal `signal` (K + 1) is set by kernel `by`: every `wait_<K>` kernel of the process is queued
// to run after it. The state lock is held.
void ReleaseWaits(Driver& d, const SharedState::Lock& lock, uint64_t signal, KernelRef by,
                  uint64_t now) {
  auto release = [&](Stream* s) {
    if (s->blocked_on != signal) return;
    s->blocked_on = 0;
    int device = s->ctx->device;
    DeviceState& dev = d.state->file().devices[device];
    AdvanceDevice(d.state->file(), device, now);
    uint64_t seq =
        Enqueue(dev, s->ctx->id, PidStatOf(d, lock, dev, device), by, kDefaultKernelNs, now);
    // A full ring leaves the waiting kernel's own 10 us out: the stream is done with the signal.
    KernelRef done = seq != 0 ? KernelRef{device, seq} : by;
    s->last_seq = done.device == device ? done.seq : 0;
    if (seq != 0) s->pending.push_back(seq);
    for (Event* e : d.events) {
      if (e->blocked == s) {
        e->blocked = nullptr;
        e->work = done;
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

bool WorkEnded(Driver& d, KernelRef work) {
  if (work.seq == 0) return true;
  if (work.seq == kBlockedSeq) return false;
  SharedState::Lock lock(*d.state);
  AdvanceDevice(d.state->file(), work.device, NowNs());
  uint64_t end = 0;
  return Ended(d.state->file(), work, &end);
}

bool EventCompleted(Driver& d, Event* ev) {
  if (!ev->recorded || ev->time_ns != 0 || ev->time_lost) return true;
  if (ev->blocked != nullptr) return false;
  if (ev->work.seq == 0) {
    ev->time_ns = ev->recorded_ns;
    return true;
  }
  SharedState::Lock lock(*d.state);
  AdvanceDevice(d.state->file(), ev->work.device, NowNs());
  uint64_t end = 0;
  if (!Ended(d.state->file(), ev->work, &end)) return false;
  if (end == 0) {
    ev->time_lost = true;
  } else {
    ev->time_ns = std::max(ev->recorded_ns, end);
  }
  return true;
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
  if (s->blocked_on != 0) {
    *retry_at = now + kBlockedPollNs;
    return CUDA_SUCCESS;
  }
  const KernelTiming& timing = f->timing;
  auto signal = timing.waits_for != 0 ? d.signals.find(timing.waits_for) : d.signals.end();
  if (timing.waits_for != 0 && signal == d.signals.end()) {
    s->blocked_on = timing.waits_for;
    s->last_seq = kBlockedSeq;
    return CUDA_SUCCESS;
  }
  int device = s->ctx->device;
  SharedState::Lock lock(*d.state);
  StateFile& file = d.state->file();
  DeviceState& dev = file.devices[device];
  if (dev.removed) return CUDA_ERROR_LAUNCH_FAILED;
  AdvanceDevice(file, device, now);
  uint64_t end = 0;
  while (!s->pending.empty() && KernelEnded(dev, s->pending.front(), &end)) s->pending.pop_front();
  if (s->pending.size() >= kMaxPendingPerStream) {
    *retry_at = EarliestEnd(dev, s->pending.front());
    return CUDA_SUCCESS;
  }
  // What it waits for that has not ended: kernels of other contexts from cuStreamWaitEvent (its
  // own context's run in launch order) and the signal of a `wait_<K>` kernel. A segment holds one;
  // with more, the launch waits on the host until one is left.
  auto ended = [&](const KernelRef& w) {
    if (w.device != device) AdvanceDevice(file, w.device, now);
    return Ended(file, w, &end);
  };
  std::erase_if(s->waits, ended);
  std::vector<KernelRef> waits = s->waits;
  if (signal != d.signals.end() && !ended(signal->second)) waits.push_back(signal->second);
  if (waits.size() > 1) {
    *retry_at = now + kBlockedPollNs;
    return CUDA_SUCCESS;
  }
  KernelRef after = waits.empty() ? KernelRef{} : waits.front();
  uint64_t duration = KernelDurationNs(timing, shape.Blocks(), dev.sms);
  uint64_t seq = Enqueue(dev, s->ctx->id, PidStatOf(d, lock, dev, device), after, duration, now);
  if (seq == 0) {
    *retry_at = EarliestRoom(dev, now);
    return CUDA_SUCCESS;
  }
  s->last_seq = seq;
  s->pending.push_back(seq);
  if (timing.signals != 0 && d.signals.emplace(timing.signals, KernelRef{device, seq}).second) {
    ReleaseWaits(d, lock, timing.signals, KernelRef{device, seq}, now);
  }
  return CUDA_SUCCESS;
}

}  // namespace simgpu
