// node.mig.*: how each GPU of the node uses MIG (docs/mig.md, "Modes"), parsed from the keys
// and checked against each GPU's model once discovery knows it.
//
//   node.mig.mode    none | fixed | dynamic       every GPU not named in node.mig.gpus
//   node.mig.layout  "all-balanced"               the layout of fixed mode (src/mig's text form)
//   node.mig.gpus    "0=fixed:1g.10gb=2,3g.40gb; GPU-8f3c...=dynamic; 2=none"
//                    per GPU by NVML index or UUID: MODE, or fixed:LAYOUT
//
// Plain values and pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "mig/layout.h"
#include "mig/layout_spec.h"
#include "node/gpu/gpu.h"

namespace tessera::node {

struct MigSetting {
  MigMode mode = MigMode::kNone;
  std::string layout;    // kFixed: the layout text as given
  mig::LayoutSpec spec;  // kFixed: its parse
  bool operator==(const MigSetting&) const = default;
};

struct MigConfig {
  MigSetting all;                             // node.mig.mode / node.mig.layout
  std::map<int, MigSetting> by_index;         // node.mig.gpus by NVML index
  std::map<std::string, MigSetting> by_uuid;  // node.mig.gpus by UUID
  std::string minors_file = "/proc/driver/nvidia-caps/mig-minors";
  bool operator==(const MigConfig&) const = default;

  // The setting of `gpu`: its UUID's, else its index's, else `all`.
  const MigSetting& For(const GpuInfo& gpu) const;
  // Whether any GPU may be in fixed or dynamic mode.
  bool AnyMig() const;
};

// Parses the three keys' values. Errors (InvalidArgument) quote the bad part and say what is
// allowed: an unknown mode, fixed without a layout, a layout that does not parse, a layout with a
// mode other than fixed, a GPU key that is neither an index nor a "GPU-" UUID, a GPU named twice.
Result<MigConfig> ParseMigConfig(const std::string& mode, const std::string& layout,
                                 const std::string& gpus);

// Checks `setting` against `gpu` and returns the layout fixed mode wants on it (nullopt for the
// other modes). FailedPrecondition when the mode is not none and the GPU cannot do MIG (a model
// without MIG in src/mig's tables, or NVML does not answer the MIG calls); InvalidArgument when
// the layout does not fit the model (PlanLayout's reason). Every message names the GPU.
Result<std::optional<mig::Layout>> CheckMigSetting(const MigSetting& setting, const GpuInfo& gpu);

// Checks node.mig.gpus against the GPUs found: a GPU named by index or UUID that is not on the
// node is an error naming the GPUs there are; then CheckMigSetting for every GPU.
Status CheckMigConfig(const MigConfig& config, const std::vector<GpuInfo>& gpus);

}  // namespace tessera::node
