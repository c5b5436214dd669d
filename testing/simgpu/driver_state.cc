#include "driver_state.h"

#include "graph_memory.h"
#include "ipc_ops.h"
#include "memory_ops.h"
#include "pool_ops.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"

namespace simgpu {
namespace {

Driver* g_driver = nullptr;

void PrepareFork() {
  g_driver->mu.lock();
}
void ParentAfterFork() {
  g_driver->mu.unlock();
}
void ChildAfterFork() {
  // The child gets a new, uninitialised driver; the parent's objects stay with the parent (the
  // copies are leaked on purpose: they describe the parent's contexts).
  g_driver = new Driver();
  CurrentContext() = nullptr;
  ContextStack().clear();
  SharedState::Forget();  // the child's cuInit reads its own environment
}

// A process that exits normally gives its device memory back at once, as with the real driver;
// one that is killed is swept by the next process that looks (shared_state.h).
struct ReleaseAtExit {
  ~ReleaseAtExit() {
    if (g_driver == nullptr || g_driver->state == nullptr) return;
    SharedState::Lock lock(*g_driver->state);
    g_driver->state->ReleaseSelf(lock);
  }
} g_release_at_exit;

}  // namespace

Driver& TheDriver() {
  // Every entry point asks for it: a function-local static's guard is one inlined load once
  // made, where std::call_once costs a call and thread-local stores each time. The driver itself
  // is g_driver: a forked child replaces it (ChildAfterFork).
  static const bool made = [] {
    g_driver = new Driver();
    pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork);
    return true;
  }();
  (void)made;
  return *g_driver;
}

std::vector<Context*>& ContextStack() {
  thread_local std::vector<Context*> stack;
  return stack;
}

ThreadContext& ThisThread() {
  thread_local ThreadContext state;
  return state;
}

CUresult CheckInit(const Driver& d) {
  return d.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult CurrentCtx(const Driver& d, Context** out) {
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  Context* c = CurrentContext();
  if (c == nullptr || d.contexts.count(c) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (c->sticky_error != CUDA_SUCCESS) return c->sticky_error;
  *out = c;
  return CUDA_SUCCESS;
}

CUresult ResolveStream(Driver& d, CUstream handle, bool per_thread, Stream** out) {
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (handle == nullptr) handle = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  if (handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    Context* ctx = nullptr;
    if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
    if (handle == CU_STREAM_LEGACY) {
      *out = &ctx->legacy;
      return CUDA_SUCCESS;
    }
    std::unique_ptr<Stream>& s = ctx->per_thread[gettid()];
    if (!s) {
      s = std::make_unique<Stream>();
      s->ctx = ctx;
      s->is_default = true;
      s->lane = d.next_lane++;
    }
    *out = s.get();
    return CUDA_SUCCESS;
  }
  Stream* s = reinterpret_cast<Stream*>(handle);
  if (d.streams.count(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *out = s;
  return CUDA_SUCCESS;
}

// A real driver's synchronisation under the default scheduling (CU_CTX_SCHED_AUTO) spins or
// yields until the work is done, and so returns within microseconds of it. A plain sleep returns
// up to the thread's timer slack (50 us by default) plus a wake-up late, gaps a GPU does not
// have: the device then idled between a program's batches of short kernels. So sleep until shortly
// before `t` and yield from there.
void WaitUntil(uint64_t t) {
  constexpr uint64_t kYieldNs = 150'000;
  if (t > NowNs() + kYieldNs) SleepUntilNs(t - kYieldNs);
  while (NowNs() < t) sched_yield();
}

void WaitForKernel(SharedState& state, KernelRef work) {
  if (work.seq == 0) return;
  if (work.seq == kBlockedSeq) {
    WaitUntil(UINT64_MAX / 2);  // behind a kernel that waits for a signal: for good
    return;
  }
  while (true) {
    uint64_t soonest = 0;
    {
      SharedState::Lock lock(state);
      uint64_t now = NowNs();
      AdvanceDevice(state.file(), work.device, now);
      uint64_t end = 0;
      const DeviceState& dev = state.file().devices[work.device];
      if (KernelEnded(dev, work.seq, &end)) return;
      soonest = EarliestEnd(dev, work.seq);
    }
    WaitUntil(soonest);
  }
}

CUresult WaitForPoint(const std::function<CUresult(KernelRef*)>& point) {
  Driver& d = TheDriver();
  while (true) {
    KernelRef work;
    SharedState* state = nullptr;
    {
      std::lock_guard<std::mutex> guard(d.mu);
      if (CUresult r = point(&work); r != CUDA_SUCCESS) return r;
      state = d.state;
    }
    if (work.seq != kBlockedSeq) {
      if (state != nullptr) WaitForKernel(*state, work);
      return CUDA_SUCCESS;
    }
    SleepUntilNs(NowNs() + 100'000);
  }
}

uint64_t HeapCharge(const Context& ctx) {
  uint64_t heap = RoundUpToGranule(ctx.heap_bytes), base = RoundUpToGranule(kDefaultHeapBytes);
  return heap > base ? heap - base : 0;
}

int OrdinalOf(const Driver& d, int device) {
  for (size_t i = 0; i < d.visible.size(); ++i) {
    if (d.visible[i] == device) return static_cast<int>(i);
  }
  return -1;
}

uint64_t RoundUpToGranule(uint64_t bytes) {
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

CUresult CheckDevice(Driver& d, int device) {
  SharedState::Lock lock(*d.state);
  return d.state->file().devices[device].removed ? CUDA_ERROR_DEVICE_UNAVAILABLE : CUDA_SUCCESS;
}

void FreeAllocation(Driver& d, std::map<uint64_t, Allocation>::iterator it) {
  Allocation& a = it->second;
  if (a.pool != nullptr) return PoolFree(d, it);
  if (a.graph_ordinal >= 0) return GraphMemoryFree(d, it);
  if (a.external != nullptr) {  // the imported memory stays; only the address range goes
    if (--a.external->buffers == 0 && a.external->destroyed) delete a.external;
    d.address_space.Free(it->first, (a.size + kGranule - 1) / kGranule * kGranule);
    d.allocations.erase(it);
    return;
  }
  if (a.ipc_id != 0) IpcExportDrop(d, a.ipc_id);
  {
    SharedState::Lock lock(*d.state);
    d.state->Uncharge(lock, a.device, a.charged);
  }
  if (a.host != nullptr) {
    munmap(a.host, a.charged);
  } else {
    d.address_space.Free(it->first, a.charged);
  }
  d.allocations.erase(it);
}

void DestroyContext(Driver& d, Context* ctx) {
  for (auto it = d.allocations.begin(); it != d.allocations.end();) {
    auto next = std::next(it);
    if (it->second.ctx == ctx) FreeAllocation(d, it);
    it = next;
  }
  for (auto it = d.host_allocations.begin(); it != d.host_allocations.end();) {
    auto next = std::next(it);
    if (it->second.ctx == ctx) FreeHostAllocation(d, it);
    it = next;
  }
  IpcCloseContext(d, ctx);
  for (Context* other : d.contexts) other->peers.erase(ctx);
  for (Stream* s : ctx->streams) {
    d.streams.erase(s);
    delete s;
  }
  for (auto it = d.events.begin(); it != d.events.end();) {
    if ((*it)->ctx != ctx) {
      ++it;
      continue;
    }
    if ((*it)->ipc_owner) IpcExportDrop(d, (*it)->ipc_id);
    delete *it;
    it = d.events.erase(it);
  }
  for (auto it = d.modules.begin(); it != d.modules.end();) {
    Module* m = *it;
    if (m->ctx != ctx) {
      ++it;
      continue;
    }
    for (auto& [name, f] : m->functions) d.functions.erase(f.get());
    delete m;
    it = d.modules.erase(it);
  }
  {
    SharedState::Lock lock(*d.state);
    d.state->Uncharge(lock, ctx->device, d.state->file().ctx_memory + HeapCharge(*ctx));
    d.state->CountContext(lock, ctx->device, -1);
  }
  d.contexts.erase(ctx);
  d.context_generation.fetch_add(1, std::memory_order_release);
  if (CurrentContext() == ctx) CurrentContext() = nullptr;
  delete ctx;
}

}  // namespace simgpu
