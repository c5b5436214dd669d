// What a container's shared region (abi/shared_region.h) says its live processes hold on each
// device, and the part of it the library served from host memory (the spill appendix). The one
// reader of regions in the node agent: the metrics exporter and the spill notices both take their
// figures from here.
//
// Pure function over a file, read without the region's lock; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::node {

// Per device index (TESSERA_REGION_MAX_DEVICES entries): bytes charged, and of them spilled.
// All empty when the region is missing, of another version or too short; `spilled` all zero
// when the region has no spill appendix (a library before issue 33).
// `limits`: the memory limit in bytes the library last applied on each device (0: none yet).
struct RegionFigures {
  std::vector<uint64_t> used, spilled, limits;
};

// The figures of the region file at `path`, counting only the slots of live processes. A process
// that exits keeps its charge until another process of the container sweeps it (the driver frees
// its memory only as it dies, docs/in-container-library.md): counting only live slots makes a
// container whose processes are all gone read 0 at once.
RegionFigures ReadRegionFigures(const std::string& path);

}  // namespace tessera::node
