// tessera-demo-workload --fill MIB [--create] [--wait FILE]: a job that fills GPU 0 with MIB MiB
// and has a kernel read every byte of it, for virtual device memory (node.device-memory-scaling
// above 1), where the part the device cannot hold is served from host memory (workload_spill.cc).
// Single-threaded.
#pragma once

namespace tessera::workload {

// Needs cuInit done and a context current. `args` are the words after `--fill`: MIB (1 to
// 1048576), then optionally `--create` (every other chunk made with cuMemCreate instead of
// cuMemAlloc) and `--wait FILE` (after the first pass, hold the memory until FILE exists, then read
// it all again). Allocates MIB MiB in 64 MiB chunks (2 MiB ones once a 64 MiB chunk is refused, so
// that a fill stopped by a limit ends exactly there), runs simgpu's touch kernel over each chunk,
// frees everything. Prints key=value findings (mem.*, fill.*). Returns the exit status: 0 when
// every call it needed worked, a refusal with CUDA_ERROR_OUT_OF_MEMORY included (that is a
// finding, fill.error=2); 1 otherwise; 2 for bad arguments.
int Fill(int argc, char** args);

}  // namespace tessera::workload
