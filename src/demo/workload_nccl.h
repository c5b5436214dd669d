// tessera-demo-workload --nccl: NCCL's single-node set-up over cuMem in one process that drives
// two GPUs (as ncclCommInitAll does), then the container's per-GPU memory limits checked on both
// GPUs while that set-up stays in place (workload_nccl.cc). Single-threaded.
#pragma once

namespace tessera::workload {

// Needs cuInit done. On the process's GPUs 0 and 1: a context each, peer access both ways, NCCL's
// receive buffers (cuMemCreate with POSIX file descriptors, access for both GPUs), a descriptor
// round trip as NCCL's proxy makes it, copies across the GPUs and a kernel on each; then each GPU
// filled to its limit while the other is left with its room, in both orders; then everything freed.
// Prints key=value findings (mem.*, nvml.*, nccl.*, limit.*). Returns the exit status: 0 when every
// call it needed worked and each fill ended in CUDA_ERROR_OUT_OF_MEMORY, 1 otherwise, 2 when the
// process sees fewer than two GPUs.
int Nccl();

}  // namespace tessera::workload
