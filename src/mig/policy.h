// Dynamic MIG: which GPU instance to create for a request, and where on the GPU.
//
//   Layout gpu(*FindModel("NVIDIA H100 80GB HBM3"));
//   Result<Choice> c = Choose(gpu, {.memory_mib = 8192, .cores_percent = 10});
//   // c->profile->name == "1g.10gb", c->start == 6
//   Status s = gpu.Create(*c->profile, c->start);
//
// The rule (docs/mig.md, "Placement policy"):
//  1. Profile: the smallest that holds the request (fewest memory slices, then fewest compute
//     slices, then least memory) and has a free placement now; a larger profile only when no
//     smaller one has room. "+me" profiles are taken only when asked for by name: the GPU has
//     one set of media engines and a size-based request must not use it up.
//  2. Placement: the free start that leaves the most room for later requests, measured on the
//     layout after the creation as Room(): the number of free placements of each profile, the
//     largest profile first, compared in that order; the lowest start on a tie.
//
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "mig/layout.h"
#include "mig/profiles.h"

namespace tessera::mig {

// What one container asks of a MIG GPU: a size, or a profile by name.
struct Request {
  uint64_t memory_mib = 0;  // at least this much memory; 0 = no memory ask
  int cores_percent = 0;    // at least this share of the GPU's compute slices, 1-100; 0 = none
  // A profile in any spelling FindProfile takes ("nvidia.com/mig-1g.10gb", "mig-3g.40gb");
  // when set, memory_mib and cores_percent stay 0.
  std::string profile;
  bool operator==(const Request&) const = default;
};

struct Choice {
  const GpuInstanceProfile* profile = nullptr;  // into the layout's model
  int start = 0;
  bool operator==(const Choice&) const = default;
};

// The request in words, for reasons: "8192 MiB and 30% cores", "profile 3g.40gb".
std::string DescribeRequest(const Request& request);

// The model's profiles that hold the request, in the order of rule 1 (smallest first).
// InvalidArgument for a malformed request (nothing asked, cores over 100, a profile together
// with a size, a malformed profile name); FailedPrecondition when none of the model's profiles
// holds it (a profile the model lacks, or a size over the whole GPU), naming the largest.
Result<std::vector<const GpuInstanceProfile*>> FittingProfiles(const GpuModel& model,
                                                               const Request& request);

// Where to create the instance for `request` on `layout`, by the rule above. Errors:
// InvalidArgument and FailedPrecondition as FittingProfiles (no layout of this GPU would do);
// ResourceExhausted when a fitting profile exists but no free placement does now (the GPU could
// hold it once instances are destroyed). Messages are filter reasons that name the sizes and
// the instances in the way:
//   "no free MIG placement for 20000 MiB on NVIDIA H100 80GB HBM3: 1g.20gb (starts 0, 2, 4, 6),
//    2g.20gb (starts 0, 2, 4), ... are blocked by 3g.40gb@0,2g.20gb@4,1g.10gb+me@6"
Result<Choice> Choose(const Layout& layout, const Request& request);

// The room a layout leaves: for each of the model's profiles, largest first (memory slices,
// then compute slices, descending; table order on a tie), how many free placements it has.
// Rule 2 compares these lexicographically.
std::vector<int> Room(const Layout& layout);

// The free starts of `profile` on `layout`, best first by rule 2.
std::vector<int> RankedStarts(const Layout& layout, const GpuInstanceProfile& profile);

}  // namespace tessera::mig
