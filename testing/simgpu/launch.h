// One kernel launch on a stream, shared by every launch entry point and graph launches: checks the
// function, the launch shape and (for a `work_<N>ns` kernel) its first argument, then queues the
// kernel (stream_ops.h), waiting outside the driver lock when the stream or the device queue is
// full. Thread-safe; takes Driver::mu itself.
#pragma once

#include <cstdint>

#include "abi/cuda_driver.h"

namespace simgpu {

// A launch's kernel arguments as the launch calls take them: `params`, a pointer to each argument,
// or `extra`, CU_LAUNCH_PARAM_BUFFER_POINTER / CU_LAUNCH_PARAM_BUFFER_SIZE pairs ending with
// CU_LAUNCH_PARAM_END. Only a `work_<N>ns` kernel's first argument is ever read.
struct KernelArgs {
  void** params = nullptr;
  void** extra = nullptr;
};

// The first argument read as a uint64_t: *params[0], or the first 8 bytes of the `extra` buffer.
// False when there is none: neither form or both, a null pointer, a buffer of fewer than 8 bytes,
// an unknown key in `extra`.
bool FirstArgumentU64(const KernelArgs& args, uint64_t* value);

// `grid`/`block`: the launch shape (all dimensions non-zero; at most 1024 threads a block). A
// `work_<N>ns` kernel without a first argument returns CUDA_ERROR_INVALID_VALUE.
CUresult LaunchOne(CUfunction f, const unsigned grid[3], const unsigned block[3],
                   const KernelArgs& args, CUstream stream, bool per_thread);

}  // namespace simgpu
