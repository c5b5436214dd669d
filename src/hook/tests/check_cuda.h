// CHECK(call) for the test programs that drive the driver API directly (compute_load,
// compute_scenario): a call that fails ends the program with its name, result and line.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "abi/cuda_driver.h"

#define CHECK(call)                                                            \
  do {                                                                         \
    CUresult rc_ = (call);                                                     \
    if (rc_ != CUDA_SUCCESS) {                                                 \
      std::fprintf(stderr, "%s failed: %d (line %d)\n", #call, rc_, __LINE__); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)
