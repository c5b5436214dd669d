#include "mig/layout_spec.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "common/strings.h"
#include "mig/policy.h"

namespace tessera::mig {
namespace {

constexpr std::string_view kForms =
    "expected all-PROFILE, all-balanced, or a list of PROFILE, PROFILE=COUNT and PROFILE@START "
    "(for example 1g.10gb=2,3g.40gb@4)";

Status SpecError(std::string_view text, const std::string& what) {
  return InvalidArgument("MIG layout \"" + std::string(text) + "\": " + what + "; " +
                         std::string(kForms));
}

// A whole number in [low, high], or -1.
int ReadInt(std::string_view text, int low, int high) {
  int value = -1;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (err != std::errc() || end != text.data() + text.size() || value < low || value > high) {
    return -1;
  }
  return value;
}

Result<LayoutItem> ParseItem(std::string_view spec_text, std::string_view item) {
  size_t at = item.find('@');
  size_t eq = item.find('=');
  if (at != std::string_view::npos && eq != std::string_view::npos) {
    return SpecError(spec_text,
                     "item \"" + std::string(item) + "\" gives both a count and a start");
  }
  size_t split = std::min(at, eq);
  Result<std::string> name = CanonicalProfileName(item.substr(0, split));
  if (!name.ok()) return SpecError(spec_text, name.status().message());
  LayoutItem out{.profile = *name};
  if (split == std::string_view::npos) return out;
  std::string_view number = Trim(item.substr(split + 1));
  if (at != std::string_view::npos) {
    out.start = ReadInt(number, 0, kMemorySlices - 1);
    if (out.start < 0) {
      return SpecError(spec_text, "item \"" + std::string(item) + "\": the start must be a " +
                                      "memory slice, 0-" + std::to_string(kMemorySlices - 1));
    }
  } else {
    out.count = ReadInt(number, 1, kComputeSlices);
    if (out.count < 0) {
      return SpecError(spec_text, "item \"" + std::string(item) + "\": the count must be 1-" +
                                      std::to_string(kComputeSlices));
    }
  }
  return out;
}

// The search of PlanLayout: places wants[index..] on `layout`, each at the first of its ranked
// starts from which the rest fits. Whether the rest fits depends only on the slices held and
// the index (the instance limits were checked up front), so failed (mask, index) pairs are
// remembered and never searched twice.
bool PlaceRest(Layout& layout, const std::vector<const GpuInstanceProfile*>& wants, size_t index,
               std::set<std::pair<uint32_t, size_t>>& failed) {
  if (index == wants.size()) return true;
  uint32_t mask = 0;
  for (const Instance& i : layout.instances()) mask |= SliceMask(i.start, i.size);
  if (failed.count({mask, index})) return false;
  for (int start : RankedStarts(layout, *wants[index])) {
    Layout next = layout;
    if (!next.Create(*wants[index], start).ok()) continue;  // ranked starts are free
    if (PlaceRest(next, wants, index + 1, failed)) {
      layout = std::move(next);
      return true;
    }
  }
  failed.insert({mask, index});
  return false;
}

// The model's profile with this shape that is not "+me"; all-balanced uses the 1g, 2g and 3g.
const GpuInstanceProfile* ByShape(const GpuModel& model, int compute, int memory) {
  for (const GpuInstanceProfile& p : model.profiles) {
    if (!p.media_extensions && p.compute_slices == compute && p.memory_slices == memory) return &p;
  }
  return nullptr;
}

}  // namespace

Result<LayoutSpec> ParseLayoutSpec(std::string_view text) {
  std::string_view trimmed = Trim(text);
  LayoutSpec spec{.text = std::string(trimmed)};
  if (trimmed.empty()) return SpecError(trimmed, "empty");
  std::string lower = ToLower(trimmed);
  if (StartsWith(lower, "all-")) {
    std::string_view rest = Trim(trimmed.substr(4));
    if (ToLower(rest) == "balanced") {
      spec.kind = LayoutSpec::Kind::kBalanced;
      return spec;
    }
    Result<std::string> name = CanonicalProfileName(rest);
    if (!name.ok()) return SpecError(trimmed, name.status().message());
    spec.kind = LayoutSpec::Kind::kAll;
    spec.all_profile = *name;
    return spec;
  }
  for (const std::string& raw : Split(trimmed, ',', /*skip_empty=*/false)) {
    std::string_view item = Trim(raw);
    if (item.empty()) return SpecError(trimmed, "an empty item between commas");
    ASSIGN_OR_RETURN(LayoutItem parsed, ParseItem(trimmed, item));
    spec.items.push_back(std::move(parsed));
  }
  return spec;
}

Result<Layout> PlanLayout(const GpuModel& model, const LayoutSpec& spec) {
  auto refuse = [&](const std::string& why) {
    return InvalidArgument("MIG layout \"" + spec.text + "\" does not fit " + model.name + ": " +
                           why);
  };
  std::vector<std::pair<const GpuInstanceProfile*, int>> fixed;  // (profile, start)
  std::vector<const GpuInstanceProfile*> counted;
  auto find = [&](const std::string& name) { return FindProfile(model, name); };
  switch (spec.kind) {
    case LayoutSpec::Kind::kAll: {
      Result<const GpuInstanceProfile*> p = find(spec.all_profile);
      if (!p.ok()) return refuse(p.status().message());
      counted.assign((*p)->max_instances, *p);
      break;
    }
    case LayoutSpec::Kind::kBalanced:
      for (auto [compute, memory, count] : {std::tuple{1, 1, 2}, {2, 2, 1}, {3, 4, 1}}) {
        const GpuInstanceProfile* p = ByShape(model, compute, memory);
        if (p == nullptr) return refuse("all-balanced needs a 1g, a 2g and a 3g profile");
        counted.insert(counted.end(), count, p);
      }
      break;
    case LayoutSpec::Kind::kList:
      for (const LayoutItem& item : spec.items) {
        Result<const GpuInstanceProfile*> p = find(item.profile);
        if (!p.ok()) return refuse(p.status().message());
        if (item.start >= 0) {
          fixed.emplace_back(*p, item.start);
        } else {
          counted.insert(counted.end(), item.count, *p);
        }
      }
      break;
  }

  // What no arrangement can change: instance limits and slice totals.
  std::map<const GpuInstanceProfile*, int> per_profile;
  int memory = 0, compute = 0;
  for (const auto& [p, start] : fixed) ++per_profile[p];
  for (const GpuInstanceProfile* p : counted) ++per_profile[p];
  for (const auto& [p, n] : per_profile) {
    if (n > p->max_instances) {
      return refuse(std::to_string(n) + " x " + p->name + ", but a GPU holds at most " +
                    std::to_string(p->max_instances));
    }
    memory += n * p->memory_slices;
    compute += n * p->compute_slices;
  }
  if (memory > kMemorySlices) {
    return refuse("it needs " + std::to_string(memory) + " memory slices, the GPU has " +
                  std::to_string(kMemorySlices));
  }
  if (compute > kComputeSlices) {
    return refuse("it needs " + std::to_string(compute) + " compute slices, the GPU has " +
                  std::to_string(kComputeSlices));
  }

  Layout layout(model);
  for (const auto& [p, start] : fixed) {
    Status created = layout.Create(*p, start);
    if (!created.ok()) return refuse(created.message());
  }
  std::stable_sort(counted.begin(), counted.end(),
                   [](const GpuInstanceProfile* a, const GpuInstanceProfile* b) {
                     if (a->memory_slices != b->memory_slices) {
                       return a->memory_slices > b->memory_slices;
                     }
                     return a->compute_slices > b->compute_slices;
                   });
  std::set<std::pair<uint32_t, size_t>> failed;
  if (!PlaceRest(layout, counted, 0, failed)) {
    std::vector<std::string> shapes;
    for (const GpuInstanceProfile* p : counted) {
      std::vector<std::string> starts;
      for (int s : p->starts) starts.push_back(std::to_string(s));
      std::string shape = p->name + " starts at " + Join(starts, " or ");
      if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
    }
    std::string beside = layout.empty() ? "" : " beside " + layout.ToString();
    return refuse("no arrangement of the valid placements holds them all" + beside + " (" +
                  Join(shapes, "; ") + ")");
  }
  return layout;
}

}  // namespace tessera::mig
