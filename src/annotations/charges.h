// How a decision (tessera.io/allocation) charges the GPUs it names: the peak of its init containers
// (which run one at a time) against the sum of its app containers (which run together), per
// quantity, as Kubernetes counts resources. The scheduler's accounting and kubectl tessera inspect
// both count a pod so. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "annotations/allocation.h"

namespace tessera::annotations {

// What a pod holds on one GPU. Exclusive when any container uses the GPU exclusively.
struct GpuCharge {
  std::string uuid;
  uint64_t memory_mib = 0;
  int cores = 0;
  bool exclusive = false;
  int slots = 0;
  bool operator==(const GpuCharge&) const = default;
};

// One entry per GPU the allocation names, in order of first appearance.
std::vector<GpuCharge> ChargesOf(const Allocation& allocation);

}  // namespace tessera::annotations
