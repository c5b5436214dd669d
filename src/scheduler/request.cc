#include "scheduler/request.h"

#include "common/strings.h"

namespace tessera::scheduler {

const char* PolicyName(Policy policy) {
  return policy == Policy::kBinpack ? "binpack" : "spread";
}

std::optional<Policy> ParsePolicy(const std::string& text) {
  std::string t = ToLower(Trim(text));
  if (t == "binpack") return Policy::kBinpack;
  if (t == "spread") return Policy::kSpread;
  return std::nullopt;
}

std::string GpuRequest::Describe() const {
  std::string out = std::to_string(count) + (count == 1 ? " GPU x " : " GPUs x ");
  if (memory_mib > 0) {
    out += std::to_string(memory_mib) + " MiB";
  } else if (memory_percent == 100) {
    out += "all memory";
  } else {
    out += std::to_string(memory_percent) + "% memory";
  }
  if (exclusive) {
    out += ", exclusive";
  } else if (cores > 0) {
    out += ", " + std::to_string(cores) + "% cores";
  }
  if (mode == ComputeMode::kElastic) out += " (elastic)";
  return out;
}

namespace {

bool ContainsAny(const std::string& lower_text, const std::vector<std::string>& needles) {
  for (const std::string& n : needles) {
    if (lower_text.find(ToLower(n)) != std::string::npos) return true;
  }
  return false;
}

bool EqualsAny(const std::string& lower_text, const std::vector<std::string>& items) {
  for (const std::string& i : items) {
    if (lower_text == ToLower(i)) return true;
  }
  return false;
}

void AppendList(std::string& out, const std::string& name, const std::vector<std::string>& items) {
  if (items.empty()) return;
  if (!out.empty()) out += ", ";
  out += name;
  out += "=";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
}

}  // namespace

bool Selection::Allows(const std::string& model, const std::string& uuid) const {
  if (empty()) return true;
  std::string m = ToLower(model);
  std::string u = ToLower(uuid);
  if (!use_types.empty() && !ContainsAny(m, use_types)) return false;
  if (ContainsAny(m, nouse_types)) return false;
  if (!use_uuids.empty() && !EqualsAny(u, use_uuids)) return false;
  if (EqualsAny(u, nouse_uuids)) return false;
  return true;
}

std::string Selection::Describe() const {
  std::string out;
  AppendList(out, use_types_from, use_types);
  AppendList(out, "nouse-gputype", nouse_types);
  AppendList(out, use_uuids_from, use_uuids);
  AppendList(out, "nouse-gpuuuid", nouse_uuids);
  return out;
}

}  // namespace tessera::scheduler
