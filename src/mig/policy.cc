#include "mig/policy.h"

#include <algorithm>

#include "common/strings.h"

namespace tessera::mig {
namespace {

// Rule 1's order: fewer memory slices, then fewer compute slices, then less memory.
bool Smaller(const GpuInstanceProfile* a, const GpuInstanceProfile* b) {
  if (a->memory_slices != b->memory_slices) return a->memory_slices < b->memory_slices;
  if (a->compute_slices != b->compute_slices) return a->compute_slices < b->compute_slices;
  return a->memory_mib < b->memory_mib;
}

std::string ProfileWithStarts(const GpuInstanceProfile& p) {
  std::vector<std::string> starts;
  for (int s : p.starts) starts.push_back(std::to_string(s));
  return p.name + " (start" + (starts.size() == 1 ? " " : "s ") + Join(starts, ", ") + ")";
}

}  // namespace

std::string DescribeRequest(const Request& request) {
  if (!request.profile.empty()) return "profile " + request.profile;
  std::vector<std::string> parts;
  if (request.memory_mib > 0) parts.push_back(std::to_string(request.memory_mib) + " MiB");
  if (request.cores_percent > 0) parts.push_back(std::to_string(request.cores_percent) + "% cores");
  return parts.empty() ? "nothing" : Join(parts, " and ");
}

Result<std::vector<const GpuInstanceProfile*>> FittingProfiles(const GpuModel& model,
                                                               const Request& request) {
  if (!request.profile.empty()) {
    if (request.memory_mib > 0 || request.cores_percent > 0) {
      return InvalidArgument("a MIG request names a profile (" + request.profile +
                             ") or a size (memory, cores), not both");
    }
    Result<const GpuInstanceProfile*> profile = FindProfile(model, request.profile);
    if (!profile.ok()) {
      if (profile.status().code() == StatusCode::kNotFound) {
        return FailedPrecondition(profile.status().message());
      }
      return profile.status();
    }
    return std::vector<const GpuInstanceProfile*>{*profile};
  }
  if (request.cores_percent < 0 || request.cores_percent > 100) {
    return InvalidArgument("MIG request for " + std::to_string(request.cores_percent) +
                           "% cores: allowed 0-100");
  }
  if (request.memory_mib == 0 && request.cores_percent == 0) {
    return InvalidArgument("a MIG request needs memory, cores or a profile; it asked for nothing");
  }
  std::vector<const GpuInstanceProfile*> fitting;
  for (const GpuInstanceProfile& p : model.profiles) {
    if (p.media_extensions) continue;
    // The profile's share of the compute slices, compute_slices/7, covers the percent asked.
    bool cores_ok = p.compute_slices * 100 >= request.cores_percent * kComputeSlices;
    if (p.memory_mib >= request.memory_mib && cores_ok) fitting.push_back(&p);
  }
  if (fitting.empty()) {
    const GpuInstanceProfile& whole = model.whole();
    return FailedPrecondition("no MIG profile of " + model.name + " holds " +
                              DescribeRequest(request) + ": the largest is " + whole.name + " (" +
                              std::to_string(whole.memory_mib) + " MiB, all " +
                              std::to_string(kComputeSlices) + " compute slices)");
  }
  std::stable_sort(fitting.begin(), fitting.end(), Smaller);
  return fitting;
}

std::vector<int> Room(const Layout& layout) {
  std::vector<const GpuInstanceProfile*> order;
  for (const GpuInstanceProfile& p : layout.model().profiles) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(),
                   [](const GpuInstanceProfile* a, const GpuInstanceProfile* b) {
                     if (a->memory_slices != b->memory_slices) {
                       return a->memory_slices > b->memory_slices;
                     }
                     return a->compute_slices > b->compute_slices;
                   });
  std::vector<int> room;
  for (const GpuInstanceProfile* p : order) {
    room.push_back(static_cast<int>(layout.FreeStarts(*p).size()));
  }
  return room;
}

std::vector<int> RankedStarts(const Layout& layout, const GpuInstanceProfile& profile) {
  std::vector<std::pair<std::vector<int>, int>> scored;  // (room after, start)
  for (int start : layout.FreeStarts(profile)) {
    Layout after = layout;
    Status created = after.Create(profile, start);
    if (!created.ok()) continue;  // FreeStarts said it fits; nothing else can fail
    scored.emplace_back(Room(after), start);
  }
  // More room first; the lower start on a tie (stable over ascending starts).
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<int> starts;
  for (const auto& [room, start] : scored) starts.push_back(start);
  return starts;
}

Result<Choice> Choose(const Layout& layout, const Request& request) {
  ASSIGN_OR_RETURN(std::vector<const GpuInstanceProfile*> fitting,
                   FittingProfiles(layout.model(), request));
  for (const GpuInstanceProfile* p : fitting) {
    std::vector<int> starts = RankedStarts(layout, *p);
    if (!starts.empty()) return Choice{.profile = p, .start = starts.front()};
  }
  std::string held = layout.empty() ? "nothing" : layout.ToString();
  std::string prefix =
      "no free MIG placement for " + DescribeRequest(request) + " on " + layout.model().name + ": ";
  if (fitting.size() == 1 && layout.Count(*fitting.front()) >= fitting.front()->max_instances) {
    // The profile's instance limit, not the slices, is what stands in the way.
    const GpuInstanceProfile& p = *fitting.front();
    return ResourceExhausted(prefix + layout.CheckPlace(p, p.starts.front()).message());
  }
  std::vector<std::string> names;
  for (const GpuInstanceProfile* p : fitting) names.push_back(ProfileWithStarts(*p));
  return ResourceExhausted(prefix + Join(names, ", ") + (names.size() == 1 ? " is" : " are") +
                           " blocked by " + held);
}

}  // namespace tessera::mig
