// Peer access between devices, as the machine's topology allows it (peer_topology.h, SIMGPU_DEVICES
// peers=): cuDeviceCanAccessPeer and cuDeviceGetP2PAttribute answer from it, and
// cuCtxEnablePeerAccess refuses a pair it does not link (CUDA_ERROR_PEER_ACCESS_UNSUPPORTED), as
// the real driver does. Peer copies (cuMemcpyPeer) are in cuda_copy.cc: they work between any
// devices (the driver stages them through the host where the devices are not peers).
#include "driver_state.h"
#include "peer_topology.h"

using namespace simgpu;

namespace {

// The physical devices of ordinals `a` and `b`; CUDA_ERROR_NOT_INITIALIZED before cuInit,
// CUDA_ERROR_INVALID_DEVICE for an ordinal the process does not have. Needs mu.
CUresult Physical(const Driver& d, CUdevice a, CUdevice b, int* pa, int* pb) {
  if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
  int n = static_cast<int>(d.visible.size());
  if (a < 0 || a >= n || b < 0 || b >= n) return CUDA_ERROR_INVALID_DEVICE;
  *pa = d.visible[static_cast<size_t>(a)];
  *pb = d.visible[static_cast<size_t>(b)];
  return CUDA_SUCCESS;
}

// The current context and the live context `peer` (CUDA_ERROR_INVALID_CONTEXT otherwise). Needs
// mu.
CUresult ContextPair(const Driver& d, CUcontext peer, Context** ctx, Context** other) {
  if (CUresult r = CurrentCtx(d, ctx); r != CUDA_SUCCESS) return r;
  *other = reinterpret_cast<Context*>(peer);
  return d.contexts.count(*other) != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

}  // namespace

extern "C" {

CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  int a = 0, b = 0;
  if (CUresult r = Physical(d, dev, peerDev, &a, &b); r != CUDA_SUCCESS) return r;
  *canAccessPeer = PeerAccess(d.state->file(), a, b) ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                 CUdevice dstDevice) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  int a = 0, b = 0;
  if (CUresult r = Physical(d, srcDevice, dstDevice, &a, &b); r != CUDA_SUCCESS) return r;
  if (a == b) return CUDA_ERROR_INVALID_DEVICE;
  const StateFile& f = d.state->file();
  bool access = PeerAccess(f, a, b), nvlink = NvlinkPeers(f, a, b);
  switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:  // lower is faster
      *value = !access ? 0 : nvlink ? 0 : 1;
      return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
      *value = access ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:  // over NVLink, not over PCIe
      *value = nvlink ? 1 : 0;
      return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context *ctx = nullptr, *peer = nullptr;
  if (CUresult r = ContextPair(d, peerContext, &ctx, &peer); r != CUDA_SUCCESS) return r;
  if (peer->device == ctx->device) return CUDA_ERROR_INVALID_DEVICE;
  if (!PeerAccess(d.state->file(), ctx->device, peer->device)) {
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  }
  if (!ctx->peers.insert(peer).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  Driver& d = TheDriver();
  std::lock_guard<std::mutex> guard(d.mu);
  Context *ctx = nullptr, *peer = nullptr;
  if (CUresult r = ContextPair(d, peerContext, &ctx, &peer); r != CUDA_SUCCESS) return r;
  return ctx->peers.erase(peer) == 1 ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

}  // extern "C"
