#include "mig/profiles.h"

#include <cctype>

#include "common/strings.h"

namespace tessera::mig {
namespace {

// Lower case without spaces, '-' and '_': "NVIDIA H100 80GB HBM3" and "nvidia-h100-80gb-hbm3"
// compare equal.
std::string ModelNameKey(std::string_view name) {
  std::string key;
  for (char c : name) {
    if (c == ' ' || c == '-' || c == '_') continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

bool ConsumePrefix(std::string_view& text, std::string_view prefix) {
  if (text.size() < prefix.size() || ToLower(text.substr(0, prefix.size())) != prefix) {
    return false;
  }
  text.remove_prefix(prefix.size());
  return true;
}

// Digits, at least one, no leading zero.
size_t ReadNumber(std::string_view text, size_t at) {
  size_t end = at;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == at || (text[at] == '0')) return std::string_view::npos;
  return end;
}

}  // namespace

const GpuModel* FindModel(std::string_view name) {
  std::string key = ModelNameKey(Trim(name));
  if (key.empty()) return nullptr;
  for (const GpuModel& model : Models()) {
    if (ModelNameKey(model.key) == key || ModelNameKey(model.name) == key) return &model;
    for (const std::string& other : model.other_names) {
      if (ModelNameKey(other) == key) return &model;
    }
  }
  return nullptr;
}

Result<std::string> CanonicalProfileName(std::string_view text) {
  std::string_view rest = Trim(text);
  if (!ConsumePrefix(rest, "nvidia.com/mig-") && !ConsumePrefix(rest, "mig-")) {
    ConsumePrefix(rest, "mig ");
  }
  std::string name = ToLower(Trim(rest));
  bool media = false;
  if (EndsWith(name, "+me") || EndsWith(name, ".me")) {
    media = true;
    name.resize(name.size() - 3);
  }
  // <g>g.<n>gb
  size_t g_end = ReadNumber(name, 0);
  bool ok = g_end != std::string_view::npos && g_end + 1 < name.size() && name[g_end] == 'g' &&
            name[g_end + 1] == '.';
  if (ok) {
    size_t mem_end = ReadNumber(name, g_end + 2);
    ok = mem_end != std::string_view::npos && name.substr(mem_end) == "gb";
  }
  if (!ok) {
    return InvalidArgument("\"" + std::string(text) +
                           "\" is not a MIG profile name: expected <g>g.<n>gb or <g>g.<n>gb+me "
                           "(for example 1g.10gb, mig-3g.40gb, nvidia.com/mig-1g.10gb.me)");
  }
  return media ? name + "+me" : name;
}

Result<const GpuInstanceProfile*> FindProfile(const GpuModel& model, std::string_view text) {
  Result<std::string> name = CanonicalProfileName(text);
  if (!name.ok()) {
    return InvalidArgument(name.status().message() + "; profiles of " + model.name + ": " +
                           ProfileNames(model));
  }
  for (const GpuInstanceProfile& profile : model.profiles) {
    if (profile.name == *name) return &profile;
  }
  return NotFound(std::string(Trim(text)) + ": no such profile on " + model.name +
                  "; allowed: " + ProfileNames(model));
}

const GpuInstanceProfile* FindProfileByNvmlIndex(const GpuModel& model, int nvml_profile) {
  for (const GpuInstanceProfile& profile : model.profiles) {
    if (profile.nvml_profile == nvml_profile) return &profile;
  }
  return nullptr;
}

std::string ResourceName(const GpuInstanceProfile& profile) {
  std::string name = "nvidia.com/mig-" + profile.name;
  for (char& c : name) {
    if (c == '+') c = '.';
  }
  return name;
}

std::string ComputeInstanceName(const GpuInstanceProfile& profile, int slices) {
  if (slices == profile.compute_slices) return profile.name;
  return std::to_string(slices) + "c." + profile.name;
}

std::string ProfileNames(const GpuModel& model) {
  std::vector<std::string> names;
  for (const GpuInstanceProfile& profile : model.profiles) names.push_back(profile.name);
  return Join(names, ", ");
}

}  // namespace tessera::mig
