// Interprocess memory and event handles (cuIpc*), as the driver API documents them:
// - cuIpcGetMemHandle exports the cuMemAlloc-style allocation that contains a pointer (not pool,
//   managed, graph or VMM memory: CUDA_ERROR_INVALID_VALUE); the same allocation always gives the
//   same handle; the handle dies with the allocation or its process.
// - cuIpcOpenMemHandle (flags must be CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) maps the allocation's
//   base into the current context, charging nothing: the exporter's allocation holds the memory.
//   Opening a handle again in the same context returns the same pointer and counts a reference;
//   opening one's own handle is CUDA_ERROR_INVALID_CONTEXT, as on the real driver.
// - cuIpcCloseMemHandle drops a reference; the range goes with the last.
// - cuIpcGetEventHandle exports an event made with CU_EVENT_INTERPROCESS (which needs
//   CU_EVENT_DISABLE_TIMING); cuIpcOpenEventHandle gives an event of the current context that
//   shares its records (ipc_ops.h).
// Another device's memory opens only where the machine's topology lets the context's device reach
// it (peer_topology.h): CUDA_ERROR_PEER_ACCESS_UNSUPPORTED otherwise. Not modelled: the rule that a
// process may open a device's handles in one context only.
#include "driver_state.h"
#include "ipc_ops.h"
#include "legacy_abi.h"
#include "peer_topology.h"

using namespace simgpu;

namespace {

// Decodes a handle of `kind` another live process exported: CUDA_ERROR_INVALID_VALUE for bytes
// that are no such handle, or whose export was freed or whose process is gone;
// CUDA_ERROR_INVALID_CONTEXT for this process's own. Needs mu.
CUresult Openable(Driver& d, const char* bytes, IpcKind kind, IpcHandleBytes* h) {
  if (!IpcHandleDecode(bytes, kind, h)) return CUDA_ERROR_INVALID_VALUE;
  SharedState::Lock lock(*d.state);
  d.state->Sweep(lock, SharedState::SweepMode::kQuick);  // its exporter may have died
  const IpcExport* e = IpcExportFind(*d.state, lock, h->id, kind);
  if (e == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return IpcExportIsOwn(*d.state, lock, *e) ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

CUresult OpenMemory(CUdeviceptr* pdptr, const CUipcMemHandle& handle, unsigned flags) {
  if (pdptr == nullptr || flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  IpcHandleBytes h;
  if (CUresult r = Openable(d, handle.reserved, IpcKind::kMemory, &h); r != CUDA_SUCCESS) return r;
  if (CUresult r = CheckDevice(d, static_cast<int>(h.device)); r != CUDA_SUCCESS) return r;
  // Another device's memory is mapped through peer access (the flag enables it when needed).
  if (static_cast<int>(h.device) != ctx->device &&
      !PeerAccess(d.state->file(), ctx->device, static_cast<int>(h.device))) {
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  }
  for (auto& [base, opening] : d.ipc_openings) {
    if (opening.id == h.id && opening.ctx == ctx) {
      ++opening.refs;
      *pdptr = base;
      return CUDA_SUCCESS;
    }
  }
  uint64_t reserved = RoundUpToGranule(h.bytes);
  uint64_t base = d.address_space.Allocate(reserved, 0);
  if (base == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  d.ipc_openings[base] = IpcOpening{h.id, static_cast<int>(h.device), h.bytes, reserved, ctx, 1};
  *pdptr = base;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  auto it = d.allocations.upper_bound(dptr);
  if (it == d.allocations.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  Allocation& a = it->second;
  if (dptr >= it->first + a.size || a.pool != nullptr || a.host != nullptr ||
      a.graph_ordinal >= 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (a.ipc_id == 0) {
    a.ipc_id = IpcExportNew(d, IpcKind::kMemory, a.device, a.size);
    if (a.ipc_id == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  IpcHandleEncode(
      IpcHandleBytes{0, a.ipc_id, IpcKind::kMemory, static_cast<uint32_t>(a.device), a.size},
      pHandle->reserved);
  return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return OpenMemory(pdptr, handle, Flags);
}
CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return OpenMemory(pdptr, handle, Flags);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  auto it = d.ipc_openings.find(dptr);
  if (it == d.ipc_openings.end()) return CUDA_ERROR_INVALID_VALUE;
  if (--it->second.refs > 0) return CUDA_SUCCESS;
  d.address_space.Free(it->first, it->second.reserved);
  d.ipc_openings.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  auto* ev = reinterpret_cast<Event*>(event);
  if (d.events.count(ev) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if ((ev->flags & CU_EVENT_INTERPROCESS) == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ev->ipc_id == 0) {
    ev->ipc_id = IpcExportNew(d, IpcKind::kEvent, ev->ctx->device, 0);
    if (ev->ipc_id == 0) return CUDA_ERROR_OUT_OF_MEMORY;
    ev->ipc_owner = true;
    IpcEventPublish(d, ev);
  }
  IpcHandleEncode(
      IpcHandleBytes{0, ev->ipc_id, IpcKind::kEvent, static_cast<uint32_t>(ev->ctx->device), 0},
      pHandle->reserved);
  return CUDA_SUCCESS;
}

CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context* ctx = nullptr;
  if (CUresult r = CurrentCtx(d, &ctx); r != CUDA_SUCCESS) return r;
  IpcHandleBytes h;
  if (CUresult r = Openable(d, handle.reserved, IpcKind::kEvent, &h); r != CUDA_SUCCESS) return r;
  auto* ev = new Event();
  ev->ctx = ctx;
  ev->flags = CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  ev->ipc_id = h.id;
  d.events.insert(ev);
  IpcEventRefresh(d, ev);
  *phEvent = reinterpret_cast<CUevent>(ev);
  return CUDA_SUCCESS;
}

}  // extern "C"
