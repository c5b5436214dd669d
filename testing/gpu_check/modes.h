// gpu_check's modes. Each prints its checks through the Reporter and returns the exit status:
// 0 when no check failed, 1 when one did (a driver call that fails mid-run is a failed check
// "<mode>.error"), 2 when it cannot run (no driver: the message says so on stderr).
#pragma once

#include "options.h"
#include "report.h"

namespace tessera::gpu_check {

// One process (modes.cc).
int RunEvents(const Options& o, Reporter& r);
int RunSpread(const Options& o, Reporter& r);
int RunStreams(const Options& o, Reporter& r);
int RunShare(const Options& o, Reporter& r);
int RunMemory(const Options& o, Reporter& r);

// Several processes (multi.cc): this program started again as `gpu_check worker`.
int RunTimeslice(const Options& o, Reporter& r);
int RunNvml(const Options& o, Reporter& r);
int RunWorker(const Options& o);

}  // namespace tessera::gpu_check
