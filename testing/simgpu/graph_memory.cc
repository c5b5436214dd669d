#include "graph_memory.h"

#include <algorithm>

namespace simgpu {

namespace {

// Takes `bytes` of device `ordinal`'s graph memory, growing what it keeps when needed.
bool Take(Driver& d, int ordinal, uint64_t bytes) {
  GraphMemory& m = d.graph_memory[static_cast<size_t>(ordinal)];
  uint64_t unused = m.reserved - m.used;
  if (bytes > unused) {
    SharedState::Lock lock(*d.state);
    if (!d.state->Charge(lock, d.visible[static_cast<size_t>(ordinal)], bytes - unused)) {
      return false;
    }
    m.reserved += bytes - unused;
    m.reserved_high = std::max(m.reserved_high, m.reserved);
  }
  m.used += bytes;
  m.used_high = std::max(m.used_high, m.used);
  return true;
}

}  // namespace

CUresult AddMemAllocNode(Driver& d, Graph* g, int ordinal, size_t bytes, KernelNode** node,
                         CUdeviceptr* address) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= static_cast<int>(d.visible.size())) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  auto n = std::make_unique<KernelNode>();
  n->kind = KernelNode::kMemAlloc;
  n->bytes = RoundUpToGranule(bytes);
  n->ordinal = ordinal;
  n->address = d.address_space.Allocate(n->bytes, 0);
  if (n->address == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *address = n->address;
  *node = n.get();
  d.nodes.insert(n.get());
  g->nodes.push_back(std::move(n));
  return CUDA_SUCCESS;
}

CUresult AddMemFreeNode(Driver& d, Graph* g, CUdeviceptr address, KernelNode** node) {
  bool known = false;
  for (const KernelNode* n : d.nodes)
    known |= n->kind == KernelNode::kMemAlloc && n->address == address;
  if (!known) return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<KernelNode>();
  n->kind = KernelNode::kMemFree;
  n->address = address;
  *node = n.get();
  d.nodes.insert(n.get());
  g->nodes.push_back(std::move(n));
  return CUDA_SUCCESS;
}

CUresult LaunchGraphMemory(Driver& d, const GraphExec& exec, Context* ctx) {
  for (const KernelNode* n : exec.memory) {
    if (n->kind == KernelNode::kMemAlloc && d.allocations.count(n->address) != 0) {
      return CUDA_ERROR_INVALID_VALUE;  // not freed since the last launch
    }
  }
  std::vector<uint64_t> backed;
  for (const KernelNode* n : exec.memory) {
    if (n->kind == KernelNode::kMemFree) {
      auto it = d.allocations.find(n->address);
      if (it != d.allocations.end() && it->second.graph_ordinal >= 0) GraphMemoryFree(d, it);
      continue;
    }
    if (!Take(d, n->ordinal, n->bytes)) {
      for (uint64_t address : backed) {  // this launch does not happen
        auto it = d.allocations.find(address);
        if (it != d.allocations.end()) GraphMemoryFree(d, it);
      }
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    Allocation a;
    a.device = d.visible[static_cast<size_t>(n->ordinal)];
    a.size = n->bytes;
    a.ctx = ctx;
    a.graph_ordinal = n->ordinal;
    d.allocations[n->address] = a;
    backed.push_back(n->address);
  }
  return CUDA_SUCCESS;
}

void GraphMemoryFree(Driver& d, std::map<uint64_t, Allocation>::iterator it) {
  d.graph_memory[static_cast<size_t>(it->second.graph_ordinal)].used -= it->second.size;
  d.allocations.erase(it);  // the address stays the node's
}

}  // namespace simgpu

using namespace simgpu;

extern "C" {

CUresult cuDeviceGraphMemTrim(CUdevice device) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  GraphMemory& m = d.graph_memory[static_cast<size_t>(device)];
  SharedState::Lock lock(*d.state);
  d.state->Uncharge(lock, d.visible[static_cast<size_t>(device)], m.reserved - m.used);
  m.reserved = m.used;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= static_cast<int>(d.visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  const GraphMemory& m = d.graph_memory[static_cast<size_t>(device)];
  uint64_t* out = static_cast<uint64_t*>(value);
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
      *out = m.used;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
      *out = m.used_high;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
      *out = m.reserved;
      return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
      *out = m.reserved_high;
      return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
