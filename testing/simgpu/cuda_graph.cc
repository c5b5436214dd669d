// Graphs: explicit kernel and memory nodes, stream capture into a new graph or an existing one
// (launches on a capturing stream become kernel nodes, stream-ordered allocations and frees memory
// nodes; what a capture forbids: capture_rules.h), instantiation and launch (every kernel node
// runs, serially, in the order added; memory nodes: graph_memory.h). Dependencies between nodes
// (and their edge data) are accepted and, since the nodes run serially, always honoured.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "capture_rules.h"
#include "driver_state.h"
#include "graph_memory.h"
#include "graph_ops.h"
#include "launch.h"

using namespace simgpu;

namespace {

// Begins capturing `h` into `into` after `deps` (nodes of `into`: the captured nodes are added
// after every node it has, so they run after them), or into a new graph when `into` is null.
CUresult BeginCapture(CUstream h, CUgraph into, const CUgraphNode* deps, size_t num_deps,
                      CUstreamCaptureMode mode, bool per_thread) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (num_deps > 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (s == &s->ctx->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (s->capture != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  auto* g = reinterpret_cast<Graph*>(into);
  if (g != nullptr) {
    if (d.graphs.count(g) == 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < num_deps; ++i) {
      auto* dep = reinterpret_cast<KernelNode*>(deps[i]);
      auto is_dep = [&](const std::unique_ptr<KernelNode>& n) { return n.get() == dep; };
      if (std::none_of(g->nodes.begin(), g->nodes.end(), is_dep)) return CUDA_ERROR_INVALID_VALUE;
    }
  } else {
    g = new Graph();
    d.graphs.insert(g);
  }
  s->capture = g;
  s->capture_to_existing = into != nullptr;
  s->capture_invalidated = false;
  s->capture_mode = mode;
  s->capture_thread = gettid();
  return CUDA_SUCCESS;
}

void DeleteGraph(Driver& d, Graph* g) {
  for (auto& n : g->nodes) d.nodes.erase(n.get());
  d.graphs.erase(g);
  delete g;
}

CUresult EndCapture(CUstream h, CUgraph* phGraph, bool per_thread) {
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (s->capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  if (CUresult r = CheckEndingThread(*s); r != CUDA_SUCCESS) return r;
  Graph* g = s->capture;
  s->capture = nullptr;
  if (s->capture_invalidated) {
    // A graph of the program's (cuStreamBeginCaptureToGraph) stays, with what was captured.
    if (!s->capture_to_existing) DeleteGraph(d, g);
    *phGraph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *phGraph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}

CUresult IsCapturing(CUstream h, CUstreamCaptureStatus* status, bool per_thread) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Stream* s = nullptr;
  if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
  // The legacy stream's status would depend on the capture: an error, which invalidates nothing.
  if (s == &s->ctx->legacy && LegacyBlockedByCapture(*s->ctx)) {
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  if (s->capture == nullptr) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
  } else {
    *status = s->capture_invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                     : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  }
  return CUDA_SUCCESS;
}

CUresult LaunchGraph(CUgraphExec hExec, CUstream h, bool per_thread) {
  Driver& d = TheDriver();
  std::vector<GraphKernel> kernels;
  std::vector<bool> touches;
  {
    std::lock_guard<std::mutex> guard(d.mu);
    if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
    auto* exec = reinterpret_cast<GraphExec*>(hExec);
    if (d.execs.count(exec) == 0) return CUDA_ERROR_INVALID_HANDLE;
    Stream* s = nullptr;
    if (CUresult r = ResolveStream(d, h, per_thread, &s); r != CUDA_SUCCESS) return r;
    if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
    if (CUresult r = LaunchGraphMemory(d, *exec, s->ctx); r != CUDA_SUCCESS) return r;
    kernels = exec->kernels;
    for (const GraphKernel& k : kernels) {  // a function unloaded since fails in LaunchOne
      touches.push_back(d.functions.count(k.function) != 0 && k.function->timing.touches_memory);
    }
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    GraphKernel& k = kernels[i];
    // The graph's copy of a `work_<N>ns` kernel's argument or a `touch_<N>ns` kernel's two.
    void* work[] = {&k.shape.units};
    void* touch[] = {&k.shape.touch_address, &k.shape.touch_bytes};
    void** params = touches[i] ? touch : work;
    CUresult r = LaunchOne(reinterpret_cast<CUfunction>(k.function), k.shape.grid, k.shape.block,
                           KernelArgs{params, nullptr}, h, per_thread);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

}  // namespace

namespace simgpu {

CUresult AddKernelNode(CUgraphNode* phNode, CUgraph hGraph, const CUgraphNode* deps, size_t numDeps,
                       CUfunction func, const LaunchShape& shape, const KernelArgs& args) {
  if (phNode == nullptr || (numDeps > 0 && deps == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* g = reinterpret_cast<Graph*>(hGraph);
  if (d.graphs.count(g) == 0) return CUDA_ERROR_INVALID_VALUE;
  auto* f = reinterpret_cast<Function*>(func);
  if (d.functions.count(f) == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < numDeps; ++i) {
    if (d.nodes.count(reinterpret_cast<KernelNode*>(deps[i])) == 0) return CUDA_ERROR_INVALID_VALUE;
  }
  auto node = std::make_unique<KernelNode>();
  node->function = f;
  node->shape = shape;
  if (!ReadKernelArguments(f->timing, args, &node->shape)) return CUDA_ERROR_INVALID_VALUE;
  *phNode = reinterpret_cast<CUgraphNode>(node.get());
  d.nodes.insert(node.get());
  g->nodes.push_back(std::move(node));
  return CUDA_SUCCESS;
}

}  // namespace simgpu

extern "C" {

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* g = new Graph();
  d.graphs.insert(g);
  *phGraph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* g = reinterpret_cast<Graph*>(hGraph);
  if (d.graphs.count(g) == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CapturingInto(d, g)) return CUDA_ERROR_ILLEGAL_STATE;  // a capture still adds to it
  DeleteGraph(d, g);
  return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                                 const CUgraphNode* dependencies, size_t numDependencies,
                                 const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AddKernelNode(phGraphNode, hGraph, dependencies, numDependencies, nodeParams->func,
                       ShapeOf(*nodeParams), ArgsOf(*nodeParams));
}

// Checks a graph and the dependencies of a node to add to it. Needs mu.
CUresult CheckNewNode(Driver& d, CUgraph hGraph, const CUgraphNode* deps, size_t numDeps,
                      Graph** graph) {
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (numDeps > 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *graph = reinterpret_cast<Graph*>(hGraph);
  if (d.graphs.count(*graph) == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < numDeps; ++i) {
    if (d.nodes.count(reinterpret_cast<KernelNode*>(deps[i])) == 0) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                const CUgraphNode* dependencies, size_t numDependencies,
                                CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  if (phGraphNode == nullptr || params == nullptr ||
      params->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      params->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Graph* g = nullptr;
  if (CUresult r = CheckNewNode(d, hGraph, dependencies, numDependencies, &g); r != CUDA_SUCCESS) {
    return r;
  }
  KernelNode* node = nullptr;
  CUresult r =
      AddMemAllocNode(d, g, params->poolProps.location.id, params->bytesize, &node, &params->dptr);
  if (r == CUDA_SUCCESS) *phGraphNode = reinterpret_cast<CUgraphNode>(node);
  return r;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                               const CUgraphNode* dependencies, size_t numDependencies,
                               CUdeviceptr dptr) {
  if (phGraphNode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Graph* g = nullptr;
  if (CUresult r = CheckNewNode(d, hGraph, dependencies, numDependencies, &g); r != CUDA_SUCCESS) {
    return r;
  }
  KernelNode* node = nullptr;
  CUresult r = AddMemFreeNode(d, g, dptr, &node);
  if (r == CUDA_SUCCESS) *phGraphNode = reinterpret_cast<CUgraphNode>(node);
  return r;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* n = reinterpret_cast<KernelNode*>(hNode);
  if (d.nodes.count(n) == 0 || n->kind != KernelNode::kMemAlloc) return CUDA_ERROR_INVALID_VALUE;
  std::memset(params, 0, sizeof(*params));
  params->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params->poolProps.location.id = n->ordinal;
  params->bytesize = n->bytes;
  params->dptr = n->address;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* n = reinterpret_cast<KernelNode*>(hNode);
  if (d.nodes.count(n) == 0) return CUDA_ERROR_INVALID_VALUE;
  *type = n->kind == KernelNode::kKernel     ? CU_GRAPH_NODE_TYPE_KERNEL
          : n->kind == KernelNode::kMemAlloc ? CU_GRAPH_NODE_TYPE_MEM_ALLOC
                                             : CU_GRAPH_NODE_TYPE_MEM_FREE;
  return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  if (numNodes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* g = reinterpret_cast<Graph*>(hGraph);
  if (d.graphs.count(g) == 0) return CUDA_ERROR_INVALID_VALUE;
  if (nodes != nullptr) {
    for (size_t i = 0; i < *numNodes && i < g->nodes.size(); ++i) {
      nodes[i] = reinterpret_cast<CUgraphNode>(g->nodes[i].get());
    }
  }
  *numNodes = g->nodes.size();
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long) {
  if (phGraphExec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* g = reinterpret_cast<Graph*>(hGraph);
  if (d.graphs.count(g) == 0) return CUDA_ERROR_INVALID_VALUE;
  auto* exec = new GraphExec();
  for (const auto& n : g->nodes) {
    if (n->kind == KernelNode::kKernel) {
      exec->kernels.push_back(GraphKernel{n->function, n->shape});
    } else {
      exec->memory.push_back(n.get());
    }
  }
  d.execs.insert(exec);
  *phGraphExec = reinterpret_cast<CUgraphExec>(exec);
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  auto* exec = reinterpret_cast<GraphExec*>(hGraphExec);
  if (d.execs.count(exec) == 0) return CUDA_ERROR_INVALID_VALUE;
  d.execs.erase(exec);
  delete exec;
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  return LaunchGraph(e, s, false);
}
CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) {
  return LaunchGraph(e, s, true);
}

CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
  return BeginCapture(h, nullptr, nullptr, 0, mode, false);
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode) {
  return BeginCapture(h, nullptr, nullptr, 0, mode, true);
}
CUresult cuStreamBeginCaptureToGraph(CUstream h, CUgraph g, const CUgraphNode* deps,
                                     const CUgraphEdgeData*, size_t num_deps,
                                     CUstreamCaptureMode mode) {
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return BeginCapture(h, g, deps, num_deps, mode, false);
}
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream h, CUgraph g, const CUgraphNode* deps,
                                          const CUgraphEdgeData*, size_t num_deps,
                                          CUstreamCaptureMode mode) {
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return BeginCapture(h, g, deps, num_deps, mode, true);
}
CUresult cuStreamEndCapture(CUstream h, CUgraph* g) {
  return EndCapture(h, g, false);
}
CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph* g) {
  return EndCapture(h, g, true);
}
CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus* st) {
  return IsCapturing(h, st, false);
}
CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus* st) {
  return IsCapturing(h, st, true);
}

}  // extern "C"
