// The driver's per-process state: visible devices, contexts, streams, events, modules, functions,
// allocations, graphs, pools and VMM handles. Device-wide state (memory, the kernel timeline) lives
// in the shared state file (shared_state.h); this is what a real driver keeps inside the process.
//
// Thread-safety: everything below is guarded by Driver::mu, except the current-context stack,
// which is thread-local. Never sleep while holding mu; take the shared state lock only inside mu
// (lock order: Driver::mu, then SharedState::Lock).
//
// Handles given to the program (CUcontext, CUstream, ...) are pointers to these objects; every call
// checks them against the live sets, so a stale or forged handle gives CUDA_ERROR_INVALID_HANDLE /
// CUDA_ERROR_INVALID_CONTEXT instead of a crash.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "abi/cuda_driver.h"
#include "address_space.h"
#include "kernel_timing.h"
#include "shared_state.h"
#include "timeline.h"

namespace simgpu {

inline constexpr size_t kMaxPendingPerStream = 1024;

struct Context;
struct Graph;

inline constexpr uint64_t kDefaultHeapBytes = 8ull << 20;  // CU_LIMIT_MALLOC_HEAP_SIZE

// A stream's last kernel while a `wait_<K>` kernel ahead of it waits for its signal (not queued
// on the device yet).
inline constexpr uint64_t kBlockedSeq = UINT64_MAX;

struct Stream {
  Context* ctx = nullptr;
  unsigned flags = 0;  // CU_STREAM_NON_BLOCKING = 1
  bool is_default = false;
  // Its lane on the device timeline (timeline.h): 0 for the legacy stream (a barrier of its
  // context), a number of its own for every other stream.
  uint32_t lane = 0;
  // The last kernel queued on it (a seq on its context's device; 0: none; kBlockedSeq while a
  // `wait_<K>` kernel waits, and later launches wait on the host). When it has ended, the stream
  // is done: a stream's kernels run in launch order.
  uint64_t last_seq = 0;
  std::vector<KernelRef> waits;      // cuStreamWaitEvent: kernels of other contexts to wait for
  std::deque<uint64_t> pending;      // seqs of queued launches (bounded)
  uint64_t blocked_on = 0;           // K + 1 while a `wait_<K>` kernel waits
  Graph* capture = nullptr;          // non-null while capturing
  bool capture_to_existing = false;  // into the program's graph (cuStreamBeginCaptureToGraph)
  bool capture_invalidated = false;
  CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  pid_t capture_thread = 0;  // the thread that began the capture
};

struct Context {
  int ordinal = 0;  // CUdevice, as the program numbers them
  int device = 0;   // physical index in the state file
  uint32_t id = 0;  // machine-wide (StateFile::next_ctx_id): the device time-slices by it
  bool primary = false;
  unsigned flags = 0;
  Stream legacy;
  std::set<Stream*> streams;                            // created streams
  std::map<pid_t, std::unique_ptr<Stream>> per_thread;  // per-thread default streams by tid
  // cuCtxSetLimit: the device heap (malloc() in kernels) is device memory; the default 8 MiB is
  // part of the context's cost, a larger heap is charged on top of it.
  uint64_t heap_bytes = kDefaultHeapBytes;
  uint64_t stack_bytes = 1024;
  uint64_t printf_fifo_bytes = 1 << 20;
  std::set<Context*> peers;  // cuCtxEnablePeerAccess: contexts whose memory this one may access
  // A sticky error (a kernel's illegal address): every later call that works in the context
  // returns it, until the context is destroyed (a primary one reset), as with the real driver.
  CUresult sticky_error = CUDA_SUCCESS;
};

struct Function {
  std::string name;
  KernelTiming timing;
  Context* ctx = nullptr;
};

// A launch's shape: grid and block dimensions, the unit count of a `work_<N>ns` kernel (its
// first argument) and the range a `touch_<N>ns` kernel reads (its first two), read when it was
// launched, captured or added to a graph (0 for other kernels).
struct LaunchShape {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  uint64_t units = 0;
  uint64_t touch_address = 0;
  uint64_t touch_bytes = 0;
  uint64_t Blocks() const { return uint64_t{grid[0]} * grid[1] * grid[2]; }
};

struct Module {
  Context* ctx = nullptr;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

struct Pool;
struct PoolChunk;

struct Allocation {
  int device = 0;
  uint64_t size = 0;     // as requested
  uint64_t charged = 0;  // rounded to the granule (0 for a pool's: its chunk is charged)
  Context* ctx = nullptr;
  void* host = nullptr;    // managed memory: host mapping of `charged` bytes
  int graph_ordinal = -1;  // a graph allocation: the device whose graph memory backs it
  Pool* pool = nullptr;    // stream-ordered: the pool and chunk it was carved from, and how much
  PoolChunk* chunk = nullptr;
  uint64_t pool_bytes = 0;
  uint64_t ipc_id = 0;  // exported by cuIpcGetMemHandle (StateFile::ipc_exports)
  struct ExternalMemory* external = nullptr;  // a buffer mapped on imported memory: no charge
};

// Another process's allocation, opened by cuIpcOpenMemHandle in `ctx`: an address range of this
// process that charges nothing (the exporter's allocation holds the memory).
struct IpcOpening {
  uint64_t id = 0;  // the export's
  int device = 0;   // where the memory is
  uint64_t size = 0;
  uint64_t reserved = 0;  // the address range: size rounded up to the granule
  Context* ctx = nullptr;
  int refs = 0;  // opens of the same handle in the same context share one range
};

struct Event {
  Context* ctx = nullptr;  // made in it, destroyed with it
  unsigned flags = 0;      // CU_EVENT_DISABLE_TIMING = 2
  bool recorded = false;
  uint64_t recorded_ns = 0;   // when cuEventRecord was called
  KernelRef work;             // the last kernel before it on its stream (seq 0: none)
  uint32_t stream_lane = 0;   // the lane of the stream it was recorded on
  uint64_t time_ns = 0;       // when it completed: 0 until known (EventTime, stream_ops.h)
  bool time_lost = false;     // its kernel ended too long ago for its end to be known
  Stream* blocked = nullptr;  // recorded behind a waiting kernel of this stream (work unknown)
  // CU_EVENT_INTERPROCESS events given a handle, and events opened from one: records and waits go
  // through StateFile::ipc_exports[...] with this id (ipc_ops.h).
  uint64_t ipc_id = 0;
  bool ipc_owner = false;  // made here (the export lives while it does), not opened
};

// A graph node: a kernel, or a memory node (graph_memory.h): an allocation of `bytes` at
// `address` (reserved when the node is made, backed while the graph's allocation is live) or the
// free of `address`.
struct KernelNode {
  enum Kind { kKernel, kMemAlloc, kMemFree } kind = kKernel;
  Function* function = nullptr;
  LaunchShape shape;
  uint64_t address = 0;
  uint64_t bytes = 0;  // rounded to the granule
  int ordinal = 0;
};

struct Graph {
  std::vector<std::unique_ptr<KernelNode>> nodes;
};

struct GraphKernel {
  Function* function = nullptr;
  LaunchShape shape;
};

struct GraphExec {
  std::vector<GraphKernel> kernels;
  std::vector<const KernelNode*> memory;  // its allocation and free nodes, in order
};

// What the device keeps for graph allocations (CU_GRAPH_MEM_ATTR_*): memory stays reserved after
// a graph allocation is freed, for the next launch, until cuDeviceGraphMemTrim.
struct GraphMemory {
  uint64_t reserved = 0, reserved_high = 0;
  uint64_t used = 0, used_high = 0;
};

// Memory a pool reserved from its device (or the host): 2 MiB for small allocations, which share
// it, or a large allocation's size rounded to the granule. Space is reused once the chunk is empty.
struct PoolChunk {
  uint64_t base = 0;
  uint64_t size = 0;
  uint64_t bump = 0;     // carved so far
  int live = 0;          // allocations in it
  void* host = nullptr;  // a host pool's mapping
};

// A stream-ordered memory pool (pool_ops.h). It keeps what it reserved after frees, and gives
// empty chunks back above its release threshold at synchronisations, or on cuMemPoolTrimTo.
struct Pool {
  int ordinal = 0;
  bool is_default = false;
  bool host = false;       // host location: charges no device memory
  bool destroyed = false;  // cuMemPoolDestroy with allocations still out: gone with the last
  uint64_t release_threshold = 0;
  uint64_t reserved = 0, reserved_high = 0;
  uint64_t used = 0, used_high = 0;
  std::vector<std::unique_ptr<PoolChunk>> chunks;
};

// A cuMemCreate or cuMemImportFromShareableHandle handle. It goes when its references (the
// creation or import, and each cuMemRetainAllocationHandle) are released and it is no longer
// mapped; its memory then too, unless it is shared (`shared_id`: StateFile::vmm_shares) and
// another process still holds it.
struct PhysicalMemory {
  int device = 0;  // physical; for a host location, the device of no charge (unused)
  uint64_t size = 0;
  bool charged = false;  // charged to this process when made here
  int refs = 1;
  int mappings = 0;
  CUmemAllocationProp prop = {};  // as created (location as the program numbered it)
  uint64_t shared_id = 0;         // exported or imported; always set for a multicast object
  bool multicast = false;         // a multicast object's handle (StateFile::multicasts)
  int host_fd = -1;               // host-located: the memfd of its bytes (host_backing.h)
  int host_device = -1;           // host-located and made here: the device its host bytes count for
};

// Another API's memory imported by descriptor (cuda_external.cc): it holds the VMM share the
// descriptor names, as a Vulkan allocation holds its memory; its buffers charge nothing.
struct ExternalMemory {
  uint64_t share_id = 0;
  int device = 0;  // physical
  uint64_t size = 0;
  int buffers = 0;         // mapped by cuExternalMemoryGetMappedBuffer and not yet freed
  bool destroyed = false;  // cuDestroyExternalMemory came first: the last buffer's free deletes it
};

// An imported semaphore: a fence value (timeline) or signalled state (binary).
struct ExternalSemaphore {
  CUexternalSemaphoreHandleType type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
  uint64_t value = 0;
};

struct Mapping {
  uint64_t size = 0;
  PhysicalMemory* memory = nullptr;
  uint32_t device_access = 0;  // cuMemSetAccess: a bit per physical device granted access
};

// Pinned host memory (cuMemHostAlloc, cuMemAllocHost; or the program's own memory registered by
// cuMemHostRegister): real pages, resident from the allocation or registration (pinned_pages.h),
// mapped for every device at the host address (unified addressing), charged to no device; counted
// as host memory of `device` for `simgpu stat`. Freed (unregistered) by cuMemFreeHost
// (cuMemHostUnregister) or with its context.
struct HostAllocation {
  uint64_t size = 0;    // as requested
  uint64_t mapped = 0;  // the whole pages it covers
  unsigned flags = 0;   // CU_MEMHOSTALLOC_* or CU_MEMHOSTREGISTER_* as given
  Context* ctx = nullptr;
  int device = 0;           // physical: the context's
  bool registered = false;  // the program's memory (cuMemHostRegister): never unmapped here
};

struct ArrayAlloc {
  int device = 0;
  uint64_t charged = 0;
};

struct Driver {
  std::mutex mu;
  std::atomic<bool> initialized = false;  // written under mu, read by cuCtxGetCurrent without it
  // Bumped (under mu) by every context destruction: a thread's current context is known alive
  // without mu while this equals its ThreadContext's checked_generation (cuCtxGetCurrent).
  std::atomic<uint64_t> context_generation = 1;
  SharedState* state = nullptr;
  std::vector<int> visible;  // ordinal -> physical device index (CUDA_VISIBLE_DEVICES)
  // The process's MIG device (visible_devices.h): its ordinal (-1: none; at most one) and its GPU
  // and compute instance ids on physical device visible[mig_ordinal].
  int mig_ordinal = -1;
  int mig_gi = -1;
  int mig_ci = -1;

  struct PrimaryContext {
    Context* ctx = nullptr;
    int refs = 0;
    unsigned flags = 0;
  };
  std::vector<PrimaryContext> primary;               // by ordinal
  std::vector<std::unique_ptr<Pool>> default_pools;  // by ordinal
  std::vector<Pool*> current_pools;                  // by ordinal: cuDeviceSetMemPool's choice
  std::vector<GraphMemory> graph_memory;             // by ordinal

  std::set<Context*> contexts;
  std::set<Stream*> streams;
  std::set<Event*> events;
  std::set<Module*> modules;
  std::set<Function*> functions;
  std::set<Graph*> graphs;
  std::set<KernelNode*> nodes;
  std::set<GraphExec*> execs;
  std::set<Pool*> pools;
  std::set<PhysicalMemory*> physical;
  std::set<ExternalMemory*> external_memories;
  std::set<ExternalSemaphore*> external_semaphores;
  std::set<ArrayAlloc*> arrays;
  std::map<uint64_t, Allocation> allocations;   // by base address
  std::map<uint64_t, uint64_t> reservations;    // VMM reserved ranges: base -> size
  std::map<uint64_t, Mapping> mappings;         // VMM mapped ranges: base -> mapping
  std::map<uint64_t, IpcOpening> ipc_openings;  // cuIpcOpenMemHandle ranges: base -> opening
  std::map<uint64_t, HostAllocation> host_allocations;  // pinned host memory: base -> allocation
  AddressSpace address_space;
  std::map<int, int> pid_stat;            // physical device -> this process's PID table entry
  std::map<uint64_t, KernelRef> signals;  // `signal_<K>` kernels: K + 1 -> the first one
  uint32_t next_lane = 1;                 // the lane of the next stream created
};

// The process's driver. After fork() the child starts with a fresh, uninitialised driver (as if it
// had never called cuInit): the parent's contexts and memory are the parent's.
Driver& TheDriver();

// The calling thread's context state: one thread-local, so that cuCtxGetCurrent's fast path
// looks it up once.
struct ThreadContext {
  Context* current = nullptr;       // top of the context stack
  uint64_t checked_generation = 0;  // context_generation when `current` was last found alive
  // cuThreadExchangeStreamCaptureMode: what captures forbid this thread (capture_rules.h).
  CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
};
ThreadContext& ThisThread();
// The calling thread's current context (top of its context stack), or nullptr.
inline Context*& CurrentContext() {
  return ThisThread().current;
}
std::vector<Context*>& ContextStack();

// Checks that cuInit succeeded; CUDA_ERROR_NOT_INITIALIZED otherwise. Needs mu.
CUresult CheckInit(const Driver& d);

// The current context, checked for being alive: CUDA_ERROR_INVALID_CONTEXT when there is none,
// its sticky error when it has one.
CUresult CurrentCtx(const Driver& d, Context** out);

// The stream a handle means: 0 is the legacy default stream (the per-thread one when
// `per_thread`), CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are explicit. Needs mu.
CUresult ResolveStream(Driver& d, CUstream handle, bool per_thread, Stream** out);

// Blocks the calling thread until CLOCK_MONOTONIC reaches `t` (no-op when already past).
void WaitUntil(uint64_t t);

// Blocks until kernel `work` has ended (at once for seq 0; for good for kBlockedSeq), asking the
// shared state again at the soonest time it can end (timeline.h EarliestEnd). Call without mu.
void WaitForKernel(SharedState& state, KernelRef work);

// Blocks until the kernel `point` names (called under mu, again each 100 us while it is
// kBlockedSeq: a kernel ahead waits for a signal) has ended. Returns what `point` returned
// otherwise: a CUresult other than CUDA_SUCCESS stops the wait.
CUresult WaitForPoint(const std::function<CUresult(KernelRef*)>& point);

// Destroys a context: its streams, events, modules and allocations go with it. Needs mu.
void DestroyContext(Driver& d, Context* ctx);

// Frees an allocation found in d.allocations. Needs mu.
void FreeAllocation(Driver& d, std::map<uint64_t, Allocation>::iterator it);

// Sweeps dead processes and checks that the device is still on the bus (CUDA_SUCCESS), or says why
// not (CUDA_ERROR_DEVICE_UNAVAILABLE). Needs mu.
CUresult CheckDevice(Driver& d, int device);

uint64_t RoundUpToGranule(uint64_t bytes);

// The program's ordinal of physical device `device`, or -1 when it is not visible. Needs mu.
int OrdinalOf(const Driver& d, int device);

// What a context's device heap costs beyond the default one (part of the context's cost).
uint64_t HeapCharge(const Context& ctx);

}  // namespace simgpu
