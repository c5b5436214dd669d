// The fixed-layout mode's text form: which GPU instances an operator wants on a MIG GPU, in the
// spirit of NVIDIA mig-parted's configs (docs/mig.md, "Fixed layouts").
//
//   all-1g.10gb                   as many 1g.10gb as the GPU holds (7 on an H100 80GB)
//   all-balanced                  two of the smallest 1g, one 2g, one 3g (mig-parted's name)
//   1g.10gb=2,2g.20gb,3g.40gb     counts per profile (no count: one); Tessera places them
//   3g.40gb@0,1g.10gb@4           instances at given first memory slices
//
// Items of a list may mix both forms and repeat a profile; spaces around ',', '=' and '@' are
// ignored; profile names take every spelling FindProfile accepts ("mig-1g.10gb", "1g.10gb.me").
//
//   Result<LayoutSpec> spec = ParseLayoutSpec("1g.10gb=2,2g.20gb,3g.40gb");
//   Result<Layout> gpu = PlanLayout(*FindModel("H100-SXM5-80GB"), *spec);
//   gpu->ToString();  // "2g.20gb@0,1g.10gb@2,1g.10gb@3,3g.40gb@4"
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "mig/layout.h"
#include "mig/profiles.h"

namespace tessera::mig {

// One item of a list: `count` instances of `profile` placed by Tessera, or one at `start`.
struct LayoutItem {
  std::string profile;  // canonical name
  int count = 1;
  int start = -1;  // -1: Tessera picks; otherwise count is 1
  bool operator==(const LayoutItem&) const = default;
};

struct LayoutSpec {
  enum class Kind { kList, kAll, kBalanced };
  Kind kind = Kind::kList;
  std::string text;               // as given, trimmed
  std::string all_profile;        // kAll: the profile ("all-1g.10gb")
  std::vector<LayoutItem> items;  // kList
  bool operator==(const LayoutSpec&) const = default;
};

// Reads the text form; checks its syntax and the profile names' form, not a model. An error
// quotes the text, names the bad part and shows the forms.
Result<LayoutSpec> ParseLayoutSpec(std::string_view text);

// The layout `spec` makes on an empty GPU of `model`, deterministic: the same spec and model
// give the same instances at the same places. Fixed starts are placed first in the order given;
// then the counted instances, largest first, each at the first start in the placement policy's
// order (policy.h, rule 2) from which the rest still fits (a search over the valid placements,
// so a spec is refused only when no arrangement holds it).
// Errors (InvalidArgument, quoting the spec and naming the model): a profile the model lacks
// (listing its profiles), more instances of a profile than it allows, more memory or compute
// slices than the GPU has, a fixed start that is not valid or overlaps, or no arrangement of the
// valid placements that holds them all.
Result<Layout> PlanLayout(const GpuModel& model, const LayoutSpec& spec);

}  // namespace tessera::mig
