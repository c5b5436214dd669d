// Copies and memsets. Device memory has no host backing: these calls check that every device
// range lies in live memory and every host pointer is non-null, order themselves like the real
// calls (synchronous ones wait for the default stream's work), and move no data.
#include "capture_rules.h"
#include "driver_state.h"
#include "memory_ops.h"
#include "stream_ops.h"

using namespace simgpu;

namespace {

enum class Side { kDevice, kHost, kUnified, kNone /* a memset: no source */ };

CUresult CheckSide(const Driver& d, Side side, uint64_t ptr, size_t bytes) {
  if (bytes == 0) return CUDA_SUCCESS;
  if (ptr == 0) return CUDA_ERROR_INVALID_VALUE;
  bool device = side == Side::kDevice || (side == Side::kUnified && InDeviceAddressRange(ptr));
  if (side == Side::kUnified && !device) {
    // A managed allocation is a host mapping: check its range when the pointer is one.
    auto it = d.allocations.upper_bound(ptr);
    if (it != d.allocations.begin() && std::prev(it)->second.host != nullptr &&
        ptr < std::prev(it)->first + std::prev(it)->second.charged) {
      device = true;
    }
  }
  if (device && !ValidDeviceRange(d, ptr, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// A copy or memset of `bytes` from `src` to `dst`. `sync`: wait for the stream's work first (the
// synchronous calls); otherwise it is queued on the stream (and takes no device time).
CUresult Transfer(Side dst_side, uint64_t dst, Side src_side, uint64_t src, size_t bytes,
                  CUstream stream, bool per_thread, bool sync) {
  Driver& d = TheDriver();
  KernelRef until;
  SharedState* state = nullptr;
  {
    std::lock_guard<std::mutex> guard(d.mu);
    Stream* s = nullptr;
    if (CUresult r = ResolveStream(d, stream, per_thread, &s); r != CUDA_SUCCESS) return r;
    if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
    if (CUresult r = CheckSide(d, dst_side, dst, bytes); r != CUDA_SUCCESS) return r;
    if (src_side != Side::kNone) {
      if (CUresult r = CheckSide(d, src_side, src, bytes); r != CUDA_SUCCESS) return r;
    }
    if (s->capture != nullptr) {
      if (sync) {
        s->capture_invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      }
      return CUDA_SUCCESS;  // copy nodes take no device time: nothing to record
    }
    if (sync) until = SyncPoint(d, *s);
    state = d.state;
  }
  WaitForKernel(*state, until);
  return CUDA_SUCCESS;
}

// cuMemcpyPeer(Async): both contexts must be live; the copy works between any two devices.
CUresult PeerTransfer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                      size_t n, CUstream stream, bool per_thread, bool sync) {
  {
    Driver& d = TheDriver();
    std::lock_guard<std::mutex> guard(d.mu);
    if (CUresult r = CheckInit(d); r != CUDA_SUCCESS) return r;
    if (d.contexts.count(reinterpret_cast<Context*>(dst_ctx)) == 0 ||
        d.contexts.count(reinterpret_cast<Context*>(src_ctx)) == 0) {
      return CUDA_ERROR_INVALID_CONTEXT;
    }
  }
  return Transfer(Side::kDevice, dst, Side::kDevice, src, n, stream, per_thread, sync);
}

}  // namespace

extern "C" {

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                      CUcontext srcContext, size_t ByteCount) {
  return PeerTransfer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr, false,
                      true);
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount) {
  return PeerTransfer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr, true, true);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  return PeerTransfer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, false,
                      false);
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  return PeerTransfer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, true,
                      false);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  return Transfer(Side::kDevice, dst, Side::kHost, reinterpret_cast<uint64_t>(src), n, nullptr,
                  false, true);
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src, size_t n) {
  return Transfer(Side::kDevice, dst, Side::kHost, reinterpret_cast<uint64_t>(src), n, nullptr,
                  true, true);
}
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  return Transfer(Side::kHost, reinterpret_cast<uint64_t>(dst), Side::kDevice, src, n, nullptr,
                  false, true);
}
CUresult cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t n) {
  return Transfer(Side::kHost, reinterpret_cast<uint64_t>(dst), Side::kDevice, src, n, nullptr,
                  true, true);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return Transfer(Side::kDevice, dst, Side::kDevice, src, n, nullptr, false, true);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return Transfer(Side::kDevice, dst, Side::kDevice, src, n, nullptr, true, true);
}
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return Transfer(Side::kUnified, dst, Side::kUnified, src, n, nullptr, false, true);
}
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return Transfer(Side::kUnified, dst, Side::kUnified, src, n, nullptr, true, true);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return Transfer(Side::kUnified, dst, Side::kUnified, src, n, s, false, false);
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return Transfer(Side::kUnified, dst, Side::kUnified, src, n, s, true, false);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return Transfer(Side::kDevice, dst, Side::kHost, reinterpret_cast<uint64_t>(src), n, s, false,
                  false);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return Transfer(Side::kDevice, dst, Side::kHost, reinterpret_cast<uint64_t>(src), n, s, true,
                  false);
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return Transfer(Side::kHost, reinterpret_cast<uint64_t>(dst), Side::kDevice, src, n, s, false,
                  false);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return Transfer(Side::kHost, reinterpret_cast<uint64_t>(dst), Side::kDevice, src, n, s, true,
                  false);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return Transfer(Side::kDevice, dst, Side::kDevice, src, n, s, false, false);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return Transfer(Side::kDevice, dst, Side::kDevice, src, n, s, true, false);
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char, size_t n) {
  return Transfer(Side::kDevice, dst, Side::kNone, 0, n, nullptr, false, true);
}
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char, size_t n) {
  return Transfer(Side::kDevice, dst, Side::kNone, 0, n, nullptr, true, true);
}
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int, size_t n) {
  if (n > SIZE_MAX / 4 || dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  return Transfer(Side::kDevice, dst, Side::kNone, 0, n * 4, nullptr, false, true);
}
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int, size_t n) {
  if (n > SIZE_MAX / 4 || dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  return Transfer(Side::kDevice, dst, Side::kNone, 0, n * 4, nullptr, true, true);
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char, size_t n, CUstream s) {
  return Transfer(Side::kDevice, dst, Side::kNone, 0, n, s, false, false);
}
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char, size_t n, CUstream s) {
  return Transfer(Side::kDevice, dst, Side::kNone, 0, n, s, true, false);
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int, size_t n, CUstream s) {
  if (n > SIZE_MAX / 4 || dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  return Transfer(Side::kDevice, dst, Side::kNone, 0, n * 4, s, false, false);
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int, size_t n, CUstream s) {
  if (n > SIZE_MAX / 4 || dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  return Transfer(Side::kDevice, dst, Side::kNone, 0, n * 4, s, true, false);
}

}  // extern "C"
