#include "stream_ops.h"

#include <algorithm>
#include <vector>

#include "clock.h"
#include "memory_ops.h"
#include "mig_state.h"
#include "timeline.h"

namespace simgpu {

KernelRef StreamLast(const Stream& s) {
  return KernelRef{s.ctx->device, s.last_seq};
}

namespace {

// The timeline the process's kernels on physical device `device` run on (timeline.h): its MIG
// device's when it uses one there, else the whole GPU's.
uint32_t TimelineOn(const Driver& d, int device) {
  if (d.mig_ordinal >= 0 && d.visible[static_cast<size_t>(d.mig_ordinal)] == device) {
    return MigSlotValue(d.mig_gi, d.mig_ci);
  }
  return 0;
}

// The point after which the work of every stream in `streams` has ended: the one stream with
// unfinished work's last kernel, or, when several have some and the device runs a context's
// streams together, a join point of the context (which waits for all of its earlier kernels,
// those of streams not in `streams` too). Serial streams end in launch order: the latest kernel.
KernelRef JoinOf(Driver& d, const Context& ctx, const std::vector<const Stream*>& streams) {
  std::vector<uint64_t> seqs;
  for (const Stream* s : streams) {
    if (s->last_seq == kBlockedSeq) return KernelRef{ctx.device, kBlockedSeq};
    if (s->last_seq != 0) seqs.push_back(s->last_seq);
  }
  uint64_t latest = seqs.empty() ? 0 : *std::max_element(seqs.begin(), seqs.end());
  if (seqs.size() <= 1) return KernelRef{ctx.device, latest};
  SharedState::Lock lock(*d.state);
  StateFile& file = d.state->file();
  DeviceState& dev = file.devices[ctx.device];
  if (!dev.streams_concurrent) return KernelRef{ctx.device, latest};
  uint64_t now = NowNs();
  AdvanceDevice(file, ctx.device, now);
  uint64_t end = 0;
  std::erase_if(seqs, [&](uint64_t seq) { return KernelEnded(dev, seq, &end); });
  if (seqs.size() <= 1) return KernelRef{ctx.device, seqs.empty() ? latest : seqs.front()};
  uint64_t join = EnqueueJoin(dev, ctx.id, now, TimelineOn(d, ctx.device));
  // A full ring: the latest kernel, which may end before the others (a short wait, not a hang).
  return KernelRef{ctx.device, join != 0 ? join : latest};
}

}  // namespace

KernelRef LegacyLast(Driver& d, const Context& ctx) {
  std::vector<const Stream*> streams{&ctx.legacy};
  for (const Stream* s : ctx.streams) {
    if ((s->flags & CU_STREAM_NON_BLOCKING) == 0) streams.push_back(s);
  }
  for (const auto& [tid, s] : ctx.per_thread) streams.push_back(s.get());
  return JoinOf(d, ctx, streams);
}

KernelRef ContextLast(Driver& d, const Context& ctx) {
  std::vector<const Stream*> streams{&ctx.legacy};
  for (const Stream* s : ctx.streams) streams.push_back(s);
  for (const auto& [tid, s] : ctx.per_thread) streams.push_back(s.get());
  return JoinOf(d, ctx, streams);
}

KernelRef SyncPoint(Driver& d, const Stream& s) {
  return &s == &s.ctx->legacy ? LegacyLast(d, *s.ctx) : StreamLast(s);
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
    uint64_t seq = Enqueue(dev, s->ctx->id, PidStatOf(d, lock, dev, device), by, kDefaultKernelNs,
                           now, s->lane, TimelineOn(d, device));
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

KernelRef StampPoint(Driver& d, Stream& s) {
  KernelRef work = SyncPoint(d, s);
  if (work.seq == kBlockedSeq) return work;
  SharedState::Lock lock(*d.state);
  StateFile& file = d.state->file();
  int device = s.ctx->device;
  DeviceState& dev = file.devices[device];
  uint64_t now = NowNs();
  AdvanceDevice(file, device, now);
  uint64_t end = 0;
  if (!dev.events_on_device || (work.seq != 0 && !Ended(file, work, &end))) return work;
  // Nothing unfinished on the stream: the stamp is written when the device processes the
  // context's work, which a time-sliced device does only in the context's slice.
  uint64_t marker = Enqueue(dev, s.ctx->id, -1, KernelRef{}, 0, now, s.lane, TimelineOn(d, device));
  return marker != 0 ? KernelRef{device, marker} : KernelRef{};
}

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
  // A `touch_<N>ns` kernel outside the memory its device addresses faults: the context is broken.
  TouchedBytes touched;
  if (timing.touches_memory &&
      !AddressableByKernel(d, *s->ctx, shape.touch_address, shape.touch_bytes, &touched)) {
    s->ctx->sticky_error = CUDA_ERROR_ILLEGAL_ADDRESS;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
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
  // What it waits for that has not ended: kernels of other contexts or streams from
  // cuStreamWaitEvent and the signal of a `wait_<K>` kernel. A segment holds one;
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
  // On the process's MIG device, a grid's waves are as wide as its compute instance's SMs.
  uint32_t sms = dev.sms;
  if (d.mig_ordinal >= 0 && d.visible[static_cast<size_t>(d.mig_ordinal)] == device &&
      MigDeviceLive(dev, d.mig_gi, d.mig_ci)) {
    sms = static_cast<uint32_t>(MigDeviceSms(dev, d.mig_gi, d.mig_ci));
  }
  uint64_t nominal =
      timing.touches_memory
          ? TouchDurationNs(timing.per_mib_ns, touched.device, touched.host, dev.host_slowdown)
          : KernelDurationNs(timing, shape.Blocks(), sms, shape.units);
  uint64_t duration = VariedDurationNs(
      nominal,
      Variation{dev.jitter_percent, dev.drift_percent, dev.drift_period_ns, DeviceSeed(dev.uuid)},
      dev.next_seq, now);
  uint64_t seq = Enqueue(dev, s->ctx->id, PidStatOf(d, lock, dev, device), after, duration, now,
                         s->lane, TimelineOn(d, device));
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
