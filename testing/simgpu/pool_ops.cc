#include "pool_ops.h"

#include <sys/mman.h>

#include <algorithm>

namespace simgpu {

namespace {

constexpr uint64_t kPoolAlignment = 512;  // of allocations inside a chunk

int PhysicalDevice(const Driver& d, const Pool* pool) {
  return d.visible[static_cast<size_t>(pool->ordinal)];
}

// Reserves a chunk of `size` bytes for `pool`; nullptr when the device (or the host) lacks it.
PoolChunk* NewChunk(Driver& d, Pool* pool, uint64_t size) {
  auto chunk = std::make_unique<PoolChunk>();
  chunk->size = size;
  if (pool->host) {
    chunk->host = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (chunk->host == MAP_FAILED) return nullptr;
    chunk->base = reinterpret_cast<uint64_t>(chunk->host);
  } else {
    {
      SharedState::Lock lock(*d.state);
      if (!d.state->Charge(lock, PhysicalDevice(d, pool), size)) return nullptr;
    }
    chunk->base = d.address_space.Allocate(size, 0);
    if (chunk->base == 0) {
      SharedState::Lock lock(*d.state);
      d.state->Uncharge(lock, PhysicalDevice(d, pool), size);
      return nullptr;
    }
  }
  pool->reserved += size;
  pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  pool->chunks.push_back(std::move(chunk));
  return pool->chunks.back().get();
}

void ReleaseChunk(Driver& d, Pool* pool, size_t index) {
  PoolChunk* chunk = pool->chunks[index].get();
  if (pool->host) {
    munmap(chunk->host, chunk->size);
  } else {
    d.address_space.Free(chunk->base, chunk->size);
    SharedState::Lock lock(*d.state);
    d.state->Uncharge(lock, PhysicalDevice(d, pool), chunk->size);
  }
  pool->reserved -= chunk->size;
  pool->chunks.erase(pool->chunks.begin() + static_cast<long>(index));
}

}  // namespace

CUresult PoolAllocate(Driver& d, Pool* pool, Context* ctx, size_t bytes, CUdeviceptr* out) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!pool->host) {
    if (CUresult r = CheckDevice(d, PhysicalDevice(d, pool)); r != CUDA_SUCCESS) return r;
  }
  uint64_t need = (bytes + kPoolAlignment - 1) / kPoolAlignment * kPoolAlignment;
  if (need < bytes) return CUDA_ERROR_OUT_OF_MEMORY;  // overflow
  PoolChunk* chunk = nullptr;
  if (need >= kGranule) {
    // A chunk of its own: an empty one that is large enough, or a new one.
    uint64_t size = RoundUpToGranule(need);
    for (auto& c : pool->chunks) {
      if (c->live == 0 && c->size >= size && (chunk == nullptr || c->size < chunk->size)) {
        chunk = c.get();
      }
    }
    if (chunk == nullptr) chunk = NewChunk(d, pool, size);
  } else {
    for (auto& c : pool->chunks) {
      if (c->size - c->bump >= need && (c->live > 0 || c->size == kGranule)) {
        chunk = c.get();
        break;
      }
    }
    if (chunk == nullptr) chunk = NewChunk(d, pool, kGranule);
  }
  if (chunk == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t address = chunk->base + chunk->bump;
  chunk->bump += need;
  ++chunk->live;
  pool->used += need;
  pool->used_high = std::max(pool->used_high, pool->used);
  Allocation a;
  a.device = pool->host ? -1 : PhysicalDevice(d, pool);
  a.size = bytes;
  a.ctx = ctx;
  a.pool = pool;
  a.chunk = chunk;
  a.pool_bytes = need;
  d.allocations[address] = a;
  *out = address;
  return CUDA_SUCCESS;
}

void PoolFree(Driver& d, std::map<uint64_t, Allocation>::iterator it) {
  Pool* pool = it->second.pool;
  PoolChunk* chunk = it->second.chunk;
  pool->used -= it->second.pool_bytes;
  if (--chunk->live == 0) chunk->bump = 0;
  d.allocations.erase(it);
  if (!pool->destroyed) return;
  PoolTrim(d, pool, 0);
  if (pool->chunks.empty()) delete pool;
}

void PoolTrim(Driver& d, Pool* pool, uint64_t keep) {
  for (size_t i = pool->chunks.size(); i > 0 && pool->reserved > keep; --i) {
    if (pool->chunks[i - 1]->live == 0) ReleaseChunk(d, pool, i - 1);
  }
}

void PoolsAtSync(Driver& d) {
  for (Pool* pool : d.pools) PoolTrim(d, pool, pool->release_threshold);
}

void PoolDestroy(Driver& d, Pool* pool) {
  d.pools.erase(pool);
  for (Pool*& current : d.current_pools) {
    if (current == pool) current = d.default_pools[static_cast<size_t>(pool->ordinal)].get();
  }
  PoolTrim(d, pool, 0);
  if (pool->chunks.empty()) {
    delete pool;
  } else {
    pool->destroyed = true;
  }
}

}  // namespace simgpu
