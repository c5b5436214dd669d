// The annotation names of the protocol between Tessera's parts (docs/annotations.md). The
// scheduler and the node agent both read and write them, so they are declared once, here.
#pragma once

namespace tessera::annotations {

inline constexpr char kGpus[] = "tessera.io/gpus";                           // node inventory
inline constexpr char kAllocation[] = "tessera.io/allocation";               // scheduler's decision
inline constexpr char kAllocated[] = "tessera.io/allocated";                 // node's record
inline constexpr char kAllocationFailed[] = "tessera.io/allocation-failed";  // node's verdict

}  // namespace tessera::annotations
