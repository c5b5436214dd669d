// The text a gpu_check load process hands back: its kernels' spans and the gaps within them in
// which it was switched out (analysis.h), on the device clock, and the clock probes taken before
// and after its run. Written by `gpu_check worker` on stdout (after a
// "ready <pid>" line, which the parser skips) and by `gpu_check share --intervals-out FILE`:
//
//   pid 4242
//   clock0 <host_before_ns> <device_ns> <host_after_ns>     (one line per probe before the run)
//   clock1 <host_before_ns> <device_ns> <host_after_ns>     (after it)
//   i <start_ns> <end_ns>                                   (one line per kernel)
//   g <from_ns> <to_ns>                                     (one line per gap)
//   missing <kernels whose stamps were not written>
//   done
//
// Thread-compatible: plain values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis.h"
#include "common/status.h"

namespace tessera::gpu_check {

struct WorkerOutput {
  int pid = 0;
  std::vector<ClockProbe> before;
  std::vector<ClockProbe> after;
  std::vector<Interval> intervals;
  std::vector<Interval> gaps;
  size_t missing = 0;
};

std::string FormatWorkerOutput(const WorkerOutput& w);

// Parses FormatWorkerOutput's text. A text without the final "done" line (the process died or
// the file is incomplete) or with a malformed line is an error naming the line.
Result<WorkerOutput> ParseWorkerOutput(std::string_view text);

}  // namespace tessera::gpu_check
