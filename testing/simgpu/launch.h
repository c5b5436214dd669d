// One kernel launch on a stream, shared by every launch entry point and graph launches: checks the
// function, the launch shape and (for a `work_<N>ns` kernel) its first argument, then queues the
// kernel (stream_ops.h), waiting outside the driver lock when the stream or the device queue is
// full. Thread-safe; takes Driver::mu itself.
#pragma once

#include <cstdint>

#include "abi/cuda_driver.h"
#include "driver_state.h"

namespace simgpu {

// A launch's kernel arguments as the launch calls take them: `params`, a pointer to each argument,
// or `extra`, CU_LAUNCH_PARAM_BUFFER_POINTER / CU_LAUNCH_PARAM_BUFFER_SIZE pairs ending with
// CU_LAUNCH_PARAM_END. Only a `work_<N>ns` kernel's first argument and a `touch_<N>ns` kernel's
// first two are ever read.
struct KernelArgs {
  void** params = nullptr;
  void** extra = nullptr;
};

// The first `count` arguments, each read as a uint64_t (a count, a device pointer, a size_t):
// *params[i], or bytes [8i, 8i + 8) of the `extra` buffer. False when they are not all there:
// neither form or both, a null pointer, a buffer of fewer than 8 * count bytes, an unknown key in
// `extra`.
bool ArgumentsU64(const KernelArgs& args, int count, uint64_t* values);

// Reads what the kernel's name says it takes into `shape`: a `work_<N>ns` kernel's unit count, a
// `touch_<N>ns` kernel's pointer and byte count. False when they are missing (ArgumentsU64).
bool ReadKernelArguments(const KernelTiming& timing, const KernelArgs& args, LaunchShape* shape);

// `grid`/`block`: the launch shape (all dimensions non-zero; at most 1024 threads a block). A
// `work_<N>ns` or `touch_<N>ns` kernel without its arguments returns CUDA_ERROR_INVALID_VALUE; a
// `touch_<N>ns` kernel whose range the device cannot address CUDA_ERROR_ILLEGAL_ADDRESS
// (stream_ops.h).
CUresult LaunchOne(CUfunction f, const unsigned grid[3], const unsigned block[3],
                   const KernelArgs& args, CUstream stream, bool per_thread);

}  // namespace simgpu
