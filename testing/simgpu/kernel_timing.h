// How long a simulated kernel occupies its device: a function named `busy_<N>us` takes N
// microseconds per launch; any other name takes 10 microseconds. Thread-safe (pure function).
#pragma once

#include <cstdint>
#include <string_view>

namespace simgpu {

uint64_t KernelDurationNs(std::string_view name);

}  // namespace simgpu
