// NvmlProcessShares: how much of each GPU's time each host process used recently, from NVML's
// per-process utilisation samples (nvmlDeviceGetProcessUtilization, smUtil: the percent of the
// sample period in which a kernel of the process ran). The metrics exporter adds them up per
// container through each allocation's pids file (src/abi/host_pids.h).
//
// Thread-safe (NVML is); the library must outlive the call.
#pragma once

#include <vector>

#include "node/gpu/gpu.h"
#include "node/gpu/nvml_library.h"
#include "node/metrics/metrics.h"

namespace tessera::node {

// NVML samples older than this are not used.
inline constexpr unsigned long long kProcessShareWindowUs = 5'000'000;

// Per GPU of `gpus`: each host PID's mean smUtil over the sample periods of the last
// kProcessShareWindowUs that have samples (an empty map when no process used the GPU). A GPU whose
// driver does not give per-process utilisation (or that does not answer) is left out.
ProcessShares NvmlProcessShares(const NvmlLibrary& nvml, const std::vector<GpuInfo>& gpus);

}  // namespace tessera::node
