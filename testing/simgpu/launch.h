// One kernel launch on a stream, shared by every launch entry point and graph launches: checks the
// function and the launch shape, then queues the kernel (stream_ops.h), waiting outside the driver
// lock when the stream or the device queue is full. Thread-safe; takes Driver::mu itself.
#pragma once

#include "abi/cuda_driver.h"

namespace simgpu {

// `grid`/`block`: the launch shape (all dimensions non-zero; at most 1024 threads a block).
CUresult LaunchOne(CUfunction f, const unsigned grid[3], const unsigned block[3], CUstream stream,
                   bool per_thread);

}  // namespace simgpu
