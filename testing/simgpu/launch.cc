#include "launch.h"

#include <cstring>

#include "capture_rules.h"
#include "stream_ops.h"

namespace simgpu {

bool ArgumentsU64(const KernelArgs& args, int count, uint64_t* values) {
  if ((args.params == nullptr) == (args.extra == nullptr)) return false;
  if (args.params != nullptr) {
    for (int i = 0; i < count; ++i) {
      if (args.params[i] == nullptr) return false;
      std::memcpy(&values[i], args.params[i], sizeof(values[i]));
    }
    return true;
  }
  const void* buffer = nullptr;
  size_t size = sizeof(uint64_t) * count;  // assumed large enough when no size is given
  // Key-value pairs up to CU_LAUNCH_PARAM_END (a bound, should the terminator be missing).
  for (int i = 0; i < 64 && args.extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (args.extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = args.extra[i + 1];
    } else if (args.extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      if (args.extra[i + 1] == nullptr) return false;
      size = *static_cast<const size_t*>(args.extra[i + 1]);
    } else {
      return false;
    }
  }
  if (buffer == nullptr || size < sizeof(uint64_t) * count) return false;
  std::memcpy(values, buffer, sizeof(uint64_t) * count);
  return true;
}

bool ReadKernelArguments(const KernelTiming& timing, const KernelArgs& args, LaunchShape* shape) {
  if (timing.takes_units) return ArgumentsU64(args, 1, &shape->units);
  if (timing.touches_memory) {
    uint64_t values[2] = {};
    if (!ArgumentsU64(args, 2, values)) return false;
    shape->touch_address = values[0];
    shape->touch_bytes = values[1];
  }
  return true;
}

CUresult LaunchOne(CUfunction f, const unsigned grid[3], const unsigned block[3],
                   const KernelArgs& args, CUstream stream, bool per_thread) {
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
      LaunchShape shape{{grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}};
      if (!ReadKernelArguments(fn->timing, args, &shape)) return CUDA_ERROR_INVALID_VALUE;
      Stream* s = nullptr;
      if (CUresult r = ResolveStream(d, stream, per_thread, &s); r != CUDA_SUCCESS) return r;
      if (CUresult r = CheckStreamUse(*s); r != CUDA_SUCCESS) return r;
      if (CUresult r = QueueKernel(d, s, fn, shape, &retry_at); r != CUDA_SUCCESS) return r;
    }
    if (retry_at == 0) return CUDA_SUCCESS;
    WaitUntil(retry_at);
  }
}

}  // namespace simgpu
