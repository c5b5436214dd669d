// The loads gpu_check's processes run (thin loops over Device; no analysis).
// Thread-compatible: one thread at a time.
#pragma once

#include <vector>

#include "device.h"

namespace tessera::gpu_check {

// Keeps the device busy until CLOCK_REALTIME reaches `end_ns`: batches of `batch` launches on
// each stream (kernels taken from `cycle` in turn), the host one batch ahead (after launching a
// batch it waits for the one before, as training loops do), then waits for everything. Each
// stream's launches are tagged with the stream's position.
Status RunBusy(Device& d, const std::vector<CUstream>& streams, const std::vector<Kernel>& cycle,
               int batch, int64_t end_ns);

// One kernel at a time, then a host sleep, so that the kernel takes `duty` of the time
// (tag 0), until CLOCK_REALTIME reaches `end_ns`.
Status RunDuty(Device& d, CUstream stream, Kernel k, double duty, int64_t end_ns);

// Launches `count` times `k` on `stream` without waiting (tag `tag`).
Status LaunchMany(Device& d, CUstream stream, Kernel k, int count, int tag);

}  // namespace tessera::gpu_check
