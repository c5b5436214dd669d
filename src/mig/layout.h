// The GPU instances on one MIG GPU and the placement rules they obey.
//
//   Layout gpu(*FindModel("H100-SXM5-80GB"));
//   const GpuInstanceProfile& p3 = **FindProfile(gpu.model(), "3g.40gb");
//   gpu.FreeStarts(p3);          // {0, 4}
//   Status s = gpu.Create(p3, 4);  // OK: memory slices 4-7
//   gpu.CheckPlace(p3, 4);       // ResourceExhausted: "... 3g.40gb@4 holds slices 4-7"
//   gpu.ToString();              // "3g.40gb@4"
//
// The rules (MIG user guide, docs/mig.md): an instance starts at one of its profile's valid
// starts, takes `memory_slices` contiguous memory slices that no other instance holds, and a
// profile has at most `max_instances` instances on a GPU (one "+me" instance: the GPU has one set
// of media engines). With the published placements these rules also keep the compute slices
// within 7 (tested over every reachable layout).
//
// A plain value: copy it to try a change. Not safe to modify from two threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "mig/profiles.h"

namespace tessera::mig {

// One GPU instance: its profile and where it sits.
struct Instance {
  std::string profile;  // canonical profile name
  int start = 0;        // first memory slice
  int size = 0;         // memory slices (the profile's)
  bool operator==(const Instance&) const = default;
};

class Layout {
 public:
  // An empty GPU of `model`, which must outlive the layout (Models() lives for the process).
  explicit Layout(const GpuModel& model) : model_(&model) {}

  const GpuModel& model() const { return *model_; }
  // Ascending start.
  const std::vector<Instance>& instances() const { return instances_; }
  bool empty() const { return instances_.empty(); }
  bool SliceUsed(int slice) const { return (used_ >> slice) & 1u; }
  int UsedMemorySlices() const;
  int UsedComputeSlices() const;
  // Instances of `profile` on the GPU.
  int Count(const GpuInstanceProfile& profile) const;

  // OK when an instance of `profile` can be created at `start` now. Otherwise:
  // InvalidArgument when it never can (the profile is not the model's, or `start` is not one of
  // its valid starts), ResourceExhausted when other instances are in the way (the slices they
  // hold, or the profile's instance limit). The message says which.
  Status CheckPlace(const GpuInstanceProfile& profile, int start) const;
  bool CanPlace(const GpuInstanceProfile& profile, int start) const {
    return CheckPlace(profile, start).ok();
  }
  // The starts where CanPlace holds, ascending.
  std::vector<int> FreeStarts(const GpuInstanceProfile& profile) const;

  // Adds the instance when CheckPlace allows it; otherwise returns its error and changes nothing.
  Status Create(const GpuInstanceProfile& profile, int start);
  // As above, with the profile in any spelling FindProfile takes.
  Status Create(std::string_view profile_name, int start);
  // Removes the instance that starts at `start`; NotFound (naming the instances) if none does.
  Status Destroy(int start);

  // "3g.40gb@0,1g.10gb@4": the instances in ascending start, in the explicit form that
  // ParseLayoutSpec reads back; "" when empty.
  std::string ToString() const;

  bool operator==(const Layout& other) const {
    return model_ == other.model_ && instances_ == other.instances_;
  }

 private:
  const GpuModel* model_;  // not owned
  std::vector<Instance> instances_;
  uint32_t used_ = 0;  // bit i: memory slice i is held
};

// The memory slices an instance of `size` at `start` holds, as a bit mask (bit i = slice i).
uint32_t SliceMask(int start, int size);

}  // namespace tessera::mig
