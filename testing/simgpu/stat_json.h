// The `simgpu stat` report: every device's identity, memory, the host memory processes hold mapped
// for it, and elapsed busy time, overall and per PID, as JSON:
//   {"devices":[{"index":0,"uuid":"GPU-...","model":"SimGPU","sms":108,"removed":false,
//     "memory_total":N,"used_bytes":N,"peak_used_bytes":N,"host_slowdown":N,
//     "host_mapped_bytes":N,"host_mapped_bytes_by_pid":{"<pid>":N},"busy_ns":N,
//     "busy_ns_by_pid":{"<pid>":N},"utilization_gpu":N}]}
// Thread-safety: takes the state lock itself.
#pragma once

#include <string>

#include "shared_state.h"

namespace simgpu {

// Sweeps dead processes, settles the timelines and renders the report.
std::string StatJson(SharedState& state);

}  // namespace simgpu
