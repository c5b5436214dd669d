#include "node/mig/mig_config.h"

#include <algorithm>

#include "common/strings.h"
#include "mig/profiles.h"

namespace tessera::node {

namespace {

constexpr const char* kModes = "none, fixed or dynamic";

Result<MigMode> ParseMode(std::string_view text, const std::string& where) {
  const std::string mode = ToLower(Trim(text));
  if (mode == "none") return MigMode::kNone;
  if (mode == "fixed") return MigMode::kFixed;
  if (mode == "dynamic") return MigMode::kDynamic;
  return InvalidArgument(where + ": MIG mode \"" + std::string(Trim(text)) + "\" is not one of " +
                         kModes);
}

Result<MigSetting> MakeSetting(MigMode mode, std::string_view layout, const std::string& where) {
  MigSetting s{.mode = mode, .layout = std::string(Trim(layout)), .spec = {}};
  if (mode != MigMode::kFixed) {
    if (!s.layout.empty()) {
      return InvalidArgument(where + ": a layout (\"" + s.layout +
                             "\") is only for mode fixed, not " + MigModeName(mode));
    }
    return s;
  }
  if (s.layout.empty()) {
    return InvalidArgument(where +
                           ": mode fixed needs a layout, for example all-balanced, "
                           "1g.10gb=2,3g.40gb or 3g.40gb@0,1g.10gb@4 (docs/mig.md)");
  }
  Result<mig::LayoutSpec> spec = mig::ParseLayoutSpec(s.layout);
  if (!spec.ok()) return spec.status().WithContext(where);
  s.spec = std::move(*spec);
  return s;
}

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string GpuName(const GpuInfo& gpu) {
  return "GPU " + std::to_string(gpu.index) + " (" + gpu.uuid + ", " + gpu.model + ")";
}

}  // namespace

const MigSetting& MigConfig::For(const GpuInfo& gpu) const {
  if (auto it = by_uuid.find(gpu.uuid); it != by_uuid.end()) return it->second;
  if (auto it = by_index.find(gpu.index); it != by_index.end()) return it->second;
  return all;
}

bool MigConfig::AnyMig() const {
  if (all.mode != MigMode::kNone) return true;
  for (const auto& [index, s] : by_index) {
    if (s.mode != MigMode::kNone) return true;
  }
  for (const auto& [uuid, s] : by_uuid) {
    if (s.mode != MigMode::kNone) return true;
  }
  return false;
}

Result<MigConfig> ParseMigConfig(const std::string& mode, const std::string& layout,
                                 const std::string& gpus) {
  MigConfig out;
  ASSIGN_OR_RETURN(MigMode all_mode, ParseMode(mode, "node.mig.mode"));
  // The default layout may stay set while the mode is not fixed (a GPU of node.mig.gpus may
  // say fixed without a layout of its own).
  ASSIGN_OR_RETURN(out.all, MakeSetting(all_mode, all_mode == MigMode::kFixed ? layout : "",
                                        "node.mig.mode=fixed, node.mig.layout"));
  if (!Trim(layout).empty()) {
    RETURN_IF_ERROR(mig::ParseLayoutSpec(layout).status().WithContext("node.mig.layout"));
  }
  for (const std::string& item : Split(gpus, ';')) {
    const std::string_view entry = Trim(item);
    if (entry.empty()) continue;
    const std::string where = "node.mig.gpus entry \"" + std::string(entry) + "\"";
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(where +
                             ": expected GPU=MODE (GPU: an NVML index or a GPU- UUID; MODE: "
                             "none, dynamic or fixed:LAYOUT), entries separated by ';'");
    }
    const std::string_view key = Trim(entry.substr(0, eq));
    const std::string_view value = Trim(entry.substr(eq + 1));
    const size_t colon = value.find(':');
    ASSIGN_OR_RETURN(MigMode m, ParseMode(value.substr(0, colon), where));
    std::string_view own_layout = colon == std::string_view::npos ? "" : value.substr(colon + 1);
    if (m == MigMode::kFixed && Trim(own_layout).empty()) own_layout = layout;
    ASSIGN_OR_RETURN(MigSetting setting, MakeSetting(m, own_layout, where));
    bool fresh = false;
    if (AllDigits(key) && key.size() <= 4) {
      fresh = out.by_index.emplace(std::stoi(std::string(key)), setting).second;
    } else if (StartsWith(key, "GPU-") && key.size() > 4) {
      fresh = out.by_uuid.emplace(std::string(key), setting).second;
    } else {
      return InvalidArgument(where + ": \"" + std::string(key) +
                             "\" names no GPU: give its NVML index (0, 1, ...) or its UUID "
                             "(GPU-...)");
    }
    if (!fresh) return InvalidArgument(where + ": GPU " + std::string(key) + " is named twice");
  }
  return out;
}

Result<std::optional<mig::Layout>> CheckMigSetting(const MigSetting& setting, const GpuInfo& gpu) {
  if (setting.mode == MigMode::kNone) return std::optional<mig::Layout>();
  const mig::GpuModel* model = mig::FindModel(gpu.model);
  if (model == nullptr) {
    std::string known;
    for (const mig::GpuModel& m : mig::Models()) known += (known.empty() ? "" : ", ") + m.name;
    return FailedPrecondition(GpuName(gpu) + ": MIG mode " + MigModeName(setting.mode) +
                              ", but Tessera knows no MIG profiles of this model (MIG models: " +
                              known + "); set its mode to none in node.mig.gpus");
  }
  if (!gpu.mig.capable) {
    return FailedPrecondition(GpuName(gpu) + ": MIG mode " + MigModeName(setting.mode) +
                              ", but the driver does not support MIG on it "
                              "(nvmlDeviceGetMigMode fails); set its mode to none");
  }
  if (setting.mode != MigMode::kFixed) return std::optional<mig::Layout>();
  Result<mig::Layout> planned = mig::PlanLayout(*model, setting.spec);
  if (!planned.ok()) return planned.status().WithContext(GpuName(gpu));
  return std::optional<mig::Layout>(std::move(*planned));
}

Status CheckMigConfig(const MigConfig& config, const std::vector<GpuInfo>& gpus) {
  std::string present;
  for (const GpuInfo& g : gpus) {
    present += (present.empty() ? "" : ", ") + std::to_string(g.index) + " (" + g.uuid + ")";
  }
  if (present.empty()) present = "none";
  for (const auto& [index, s] : config.by_index) {
    const bool found =
        std::any_of(gpus.begin(), gpus.end(), [&](const GpuInfo& g) { return g.index == index; });
    if (!found) {
      return InvalidArgument("node.mig.gpus names GPU " + std::to_string(index) +
                             ", which is not on this node; its GPUs: " + present);
    }
  }
  for (const auto& [uuid, s] : config.by_uuid) {
    if (FindGpu(gpus, uuid) == nullptr) {
      return InvalidArgument("node.mig.gpus names GPU " + uuid +
                             ", which is not on this node; its GPUs: " + present);
    }
  }
  for (const GpuInfo& g : gpus) RETURN_IF_ERROR(CheckMigSetting(config.For(g), g).status());
  return Status::Ok();
}

}  // namespace tessera::node
