// gpu_check's command line: `gpu_check MODE [options]` (the usage text is kUsage).
// Thread-compatible: plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace tessera::gpu_check {

extern const char kUsage[];

struct Options {
  std::string mode;              // timeslice, nvml, events, spread, streams, share, memory, worker
  std::string out;               // --out FILE: JSON lines appended
  std::string name;              // --name NAME: the check's name (share; default "share")
  int device = 0;                // --device N: CUDA ordinal (and NVML index)
  double seconds = 0;            // --seconds S: measured time; 0 = the mode's default
  double warmup = 1;             // --warmup S (share): load before the measured window
  std::optional<double> expect;  // --expect PERCENT (share)
  std::optional<double> tolerance;       // --tolerance POINTS (share: 3, nvml: 5)
  std::optional<double> at_least;        // --at-least PERCENT (share)
  bool variable = false;                 // --variable (share): spin lengths and arith in turn
  int streams = 1;                       // --streams 1|2 (share)
  std::string neighbour_intervals;       // --neighbour-intervals FILE (share)
  std::string intervals_out;             // --intervals-out FILE (share)
  std::string ready_file;                // --ready-file FILE (share): created once the load runs
  std::string libcuda = "libcuda.so.1";  // --libcuda PATH
  std::string libnvml = "libnvidia-ml.so.1";  // --libnvml PATH
  double kernel_us = 0;  // --kernel-us N (worker, share): spin length; 0 = default
  double duty = 1;       // --duty F (worker): busy fraction, 1 = back to back
  double limit_gib = 4;  // --limit-gib G (memory): the limit the library was given
};

// Parses argv[1..argc-1]. Errors name the option and what is allowed.
Result<Options> ParseOptions(const std::vector<std::string>& args);

}  // namespace tessera::gpu_check
