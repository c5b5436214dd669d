#include "launch.h"

#include "capture_rules.h"
#include "driver_state.h"
#include "stream_ops.h"

namespace simgpu {

CUresult LaunchOne(CUfunction f, const unsigned grid[3], const unsigned block[3], CUstream stream,
                   bool per_thread) {
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0) return CUDA_ERROR_INVALID_VALUE;
  }
  if (static_cast<uint64_t>(block[0]) * block[1] * block[2] > 1024) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = TheDriver();
  while (true) {
    uint64_t retry_at = 0;
    {
      std::lock_guard<std::mutex> guard(d.mu);
      if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
      auto* fn = reinterpret_cast<Function*>(f);
      if (d.functions.count(fn) == 0) return CUDA_ERROR_INVALID_HANDLE;
      Stream* s = nullptr;
      if (CUresult r = ResolveStream(d, stream, per_thread, &s); r != CUDA_SUCCESS) return r;
      if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
      LaunchShape shape{{grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}};
      if (CUresult r = QueueKernel(d, s, fn, shape, &retry_at); r != CUDA_SUCCESS) return r;
    }
    if (retry_at == 0) return CUDA_SUCCESS;
    WaitUntil(retry_at);
  }
}

}  // namespace simgpu
