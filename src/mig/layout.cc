#include "mig/layout.h"

#include <algorithm>

#include "common/strings.h"

namespace tessera::mig {
namespace {

std::string SliceRange(int start, int size) {
  if (size == 1) return "slice " + std::to_string(start);
  return "slices " + std::to_string(start) + "-" + std::to_string(start + size - 1);
}

std::string Starts(const std::vector<int>& starts) {
  std::vector<std::string> texts;
  for (int s : starts) texts.push_back(std::to_string(s));
  return Join(texts, ", ");
}

bool IsModelProfile(const GpuModel& model, const GpuInstanceProfile& profile) {
  for (const GpuInstanceProfile& p : model.profiles) {
    if (&p == &profile) return true;
  }
  return false;
}

}  // namespace

uint32_t SliceMask(int start, int size) {
  return ((1u << size) - 1u) << start;
}

int Layout::UsedMemorySlices() const {
  int n = 0;
  for (const Instance& i : instances_) n += i.size;
  return n;
}

int Layout::UsedComputeSlices() const {
  int n = 0;
  for (const Instance& i : instances_) {
    for (const GpuInstanceProfile& p : model_->profiles) {
      if (p.name == i.profile) n += p.compute_slices;
    }
  }
  return n;
}

int Layout::Count(const GpuInstanceProfile& profile) const {
  return static_cast<int>(
      std::count_if(instances_.begin(), instances_.end(),
                    [&](const Instance& i) { return i.profile == profile.name; }));
}

Status Layout::CheckPlace(const GpuInstanceProfile& profile, int start) const {
  if (!IsModelProfile(*model_, profile)) {
    return InvalidArgument(profile.name + " is not a profile of this GPU's table (" + model_->name +
                           "; profiles: " + ProfileNames(*model_) + ")");
  }
  if (std::find(profile.starts.begin(), profile.starts.end(), start) == profile.starts.end()) {
    return InvalidArgument(profile.name + " cannot start at slice " + std::to_string(start) +
                           " on " + model_->name + ": its placements start at " +
                           Starts(profile.starts));
  }
  int count = Count(profile);
  if (count >= profile.max_instances) {
    std::string why = profile.media_extensions ? " (the GPU has one set of media engines)" : "";
    return ResourceExhausted(profile.name + ": at most " + std::to_string(profile.max_instances) +
                             " per GPU" + why + ", " + std::to_string(count) + " in use");
  }
  uint32_t want = SliceMask(start, profile.memory_slices);
  for (const Instance& i : instances_) {
    if (SliceMask(i.start, i.size) & want) {
      return ResourceExhausted(profile.name + "@" + std::to_string(start) + " needs memory " +
                               SliceRange(start, profile.memory_slices) + ", and " + i.profile +
                               "@" + std::to_string(i.start) + " holds " +
                               SliceRange(i.start, i.size));
    }
  }
  return Status::Ok();
}

std::vector<int> Layout::FreeStarts(const GpuInstanceProfile& profile) const {
  std::vector<int> starts;
  for (int s : profile.starts) {
    if (CanPlace(profile, s)) starts.push_back(s);
  }
  return starts;
}

Status Layout::Create(const GpuInstanceProfile& profile, int start) {
  RETURN_IF_ERROR(CheckPlace(profile, start));
  Instance instance{.profile = profile.name, .start = start, .size = profile.memory_slices};
  auto at = std::lower_bound(instances_.begin(), instances_.end(), start,
                             [](const Instance& i, int s) { return i.start < s; });
  instances_.insert(at, instance);
  used_ |= SliceMask(start, profile.memory_slices);
  return Status::Ok();
}

Status Layout::Create(std::string_view profile_name, int start) {
  ASSIGN_OR_RETURN(const GpuInstanceProfile* profile, FindProfile(*model_, profile_name));
  return Create(*profile, start);
}

Status Layout::Destroy(int start) {
  for (auto it = instances_.begin(); it != instances_.end(); ++it) {
    if (it->start == start) {
      used_ &= ~SliceMask(it->start, it->size);
      instances_.erase(it);
      return Status::Ok();
    }
  }
  std::string held = instances_.empty() ? "none" : ToString();
  return NotFound("no GPU instance starts at slice " + std::to_string(start) + " on this " +
                  model_->name + " (instances: " + held + ")");
}

std::string Layout::ToString() const {
  std::vector<std::string> items;
  for (const Instance& i : instances_) items.push_back(i.profile + "@" + std::to_string(i.start));
  return Join(items, ",");
}

}  // namespace tessera::mig
