#include "memory_ops.h"

#include <sys/mman.h>

#include <algorithm>

#include "ipc_ops.h"
#include "pinned_pages.h"

namespace simgpu {
namespace {

// One range of the process's address space the driver knows, as a kernel sees it.
struct Region {
  uint64_t end = 0;
  bool host = false;       // host memory
  bool reachable = false;  // the kernel's device may address it
};

bool Reaches(const Context& ctx, int device) {
  if (device == ctx.device) return true;
  return std::any_of(ctx.peers.begin(), ctx.peers.end(),
                     [&](const Context* peer) { return peer->device == device; });
}

// The entry of `ranges` (base -> something with a `size`) that holds `at`, or its end().
template <typename Ranges>
typename Ranges::const_iterator Holding(const Ranges& ranges, uint64_t at) {
  auto it = ranges.upper_bound(at);
  if (it == ranges.begin()) return ranges.end();
  --it;
  return at < it->first + it->second.size ? it : ranges.end();
}

bool RegionAt(const Driver& d, const Context& ctx, uint64_t at, Region* r) {
  if (auto a = Holding(d.allocations, at); a != d.allocations.end()) {
    const Allocation& x = a->second;
    bool host_pool = x.pool != nullptr && x.pool->host;
    bool managed = x.host != nullptr;
    *r = {a->first + x.size, host_pool, host_pool || managed || Reaches(ctx, x.device)};
    return true;
  }
  if (auto o = Holding(d.ipc_openings, at); o != d.ipc_openings.end()) {
    *r = {o->first + o->second.size, false, Reaches(ctx, o->second.device)};
    return true;
  }
  if (auto m = Holding(d.mappings, at); m != d.mappings.end()) {
    *r = {m->first + m->second.size, m->second.memory->host_fd >= 0,
          ((m->second.device_access >> ctx.device) & 1) != 0};
    return true;
  }
  if (auto h = Holding(d.host_allocations, at); h != d.host_allocations.end()) {
    *r = {h->first + h->second.size, true, true};
    return true;
  }
  return false;
}

}  // namespace

CUresult Allocate(Driver& d, Context* ctx, size_t bytes, bool managed, CUdeviceptr* out) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(d, ctx->device); r != CUDA_SUCCESS) return r;
  uint64_t charged = RoundUpToGranule(bytes);
  if (charged < bytes) return CUDA_ERROR_OUT_OF_MEMORY;  // overflow
  {
    SharedState::Lock lock(*d.state);
    if (!d.state->Charge(lock, ctx->device, charged)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  uint64_t base = 0;
  void* host = nullptr;
  if (managed) {
    host = mmap(nullptr, charged, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (host == MAP_FAILED) host = nullptr;
    base = reinterpret_cast<uint64_t>(host);
  } else {
    base = d.address_space.Allocate(charged, 0);
  }
  if (base == 0) {
    SharedState::Lock lock(*d.state);
    d.state->Uncharge(lock, ctx->device, charged);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  d.allocations[base] = Allocation{ctx->device, bytes, charged, ctx, host};
  *out = base;
  return CUDA_SUCCESS;
}

bool AddressableByKernel(const Driver& d, const Context& ctx, uint64_t ptr, uint64_t bytes,
                         TouchedBytes* out) {
  *out = {};
  uint64_t end = ptr + bytes;
  if (end < ptr) return false;
  for (uint64_t at = ptr; at < end;) {
    Region r;
    if (!RegionAt(d, ctx, at, &r) || !r.reachable) return false;
    uint64_t upto = std::min(end, r.end);
    (r.host ? out->host : out->device) += upto - at;
    at = upto;
  }
  return true;
}

void FreeHostAllocation(Driver& d, std::map<uint64_t, HostAllocation>::iterator it) {
  {
    SharedState::Lock lock(*d.state);
    d.state->UnchargeHost(lock, it->second.device, it->second.mapped);
  }
  if (!it->second.registered) FreePinnedPages(reinterpret_cast<void*>(it->first), it->second.size);
  d.host_allocations.erase(it);
}

bool InDeviceAddressRange(uint64_t ptr) {
  return ptr >= AddressSpace::kBase && ptr < AddressSpace::kBase + AddressSpace::kSize;
}

bool ValidDeviceRange(const Driver& d, uint64_t ptr, size_t bytes) {
  if (ptr == 0) return false;
  uint64_t end = ptr + bytes;
  if (end < ptr) return false;
  auto it = d.allocations.upper_bound(ptr);
  if (it != d.allocations.begin()) {
    --it;
    if (ptr >= it->first && end <= it->first + it->second.size) return true;
  }
  if (IpcOpeningAt(d, ptr, bytes) != nullptr) return true;
  // VMM: a run of adjacent mappings may cover the range.
  uint64_t at = ptr;
  while (true) {
    auto m = d.mappings.upper_bound(at);
    if (m == d.mappings.begin()) return false;
    --m;
    if (at >= m->first + m->second.size) return false;
    at = m->first + m->second.size;
    if (at >= end) return true;
  }
}

}  // namespace simgpu
