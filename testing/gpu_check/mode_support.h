// What modes.cc and multi.cc share: loading the driver or saying why not, and turning a driver
// error into a failed check. Thread-compatible.
#pragma once

#include <memory>
#include <string>

#include "driver.h"
#include "report.h"

namespace tessera::gpu_check {

// The exit status of a mode that cannot run (no driver, bad options).
inline constexpr int kCannotRun = 2;

// The driver, kept for the life of the process; nullptr after printing why on stderr (the mode
// then exits kCannotRun).
const Cuda* LoadCudaOrExplain(const std::string& path);
const Nvml* LoadNvmlOrExplain(const std::string& path);

// Emits "<mode>.error  FAIL  error=..." and returns 1.
int FailWith(Reporter& r, const std::string& mode, const Status& status);

// The exit status after the checks: 1 when one failed, else 0.
inline int ExitStatus(const Reporter& r) {
  return r.failed() ? 1 : 0;
}

}  // namespace tessera::gpu_check
