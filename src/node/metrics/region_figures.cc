#include "node/metrics/region_figures.h"

#include <fcntl.h>
#include <unistd.h>

#include <memory>

#include "abi/shared_region.h"

namespace tessera::node {

namespace {

// Whether taken slot `s` of the region open as `fd` belongs to a live process: its liveness lock
// is held (abi/shared_region.h). A slot of an older library, without the lock, names its process by
// a PID of the container's namespace, which means nothing here: it counts as alive.
bool SlotAlive(int fd, const tessera_region_slot& slot, int s) {
  if (!(slot.flags & TESSERA_SLOT_LIVENESS_LOCK)) return true;
  struct flock fl;
  tessera_slot_liveness_flock(&fl, s, F_WRLCK);
  if (::fcntl(fd, F_OFD_GETLK, &fl) != 0) return true;
  return fl.l_type != F_UNLCK;
}

}  // namespace

RegionFigures ReadRegionFigures(const std::string& path) {
  RegionFigures out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  auto r = std::make_unique<tessera_region>();
  ssize_t n = ::pread(fd, r.get(), sizeof(tessera_region), 0);
  if (n == static_cast<ssize_t>(sizeof(tessera_region)) && r->magic == TESSERA_REGION_MAGIC &&
      r->version == TESSERA_REGION_VERSION) {
    auto spill = std::make_unique<tessera_region_spill>();
    const bool has_spill = r->spill_offset == TESSERA_REGION_SPILL_OFFSET &&
                           ::pread(fd, spill.get(), sizeof(tessera_region_spill),
                                   static_cast<off_t>(TESSERA_REGION_SPILL_OFFSET)) ==
                               static_cast<ssize_t>(sizeof(tessera_region_spill));
    out.used.assign(TESSERA_REGION_MAX_DEVICES, 0);
    out.spilled.assign(TESSERA_REGION_MAX_DEVICES, 0);
    for (int i = 0; i < TESSERA_REGION_MAX_DEVICES; ++i) {
      out.limits.push_back(r->devices[i].limit_bytes);
    }
    for (int s = 0; s < TESSERA_REGION_MAX_SLOTS; ++s) {
      const tessera_region_slot& slot = r->slots[s];
      if (slot.pid == 0 || !SlotAlive(fd, slot, s)) continue;
      for (int i = 0; i < TESSERA_REGION_MAX_DEVICES; ++i) {
        out.used[i] += slot.used_bytes[i];
        if (has_spill) out.spilled[i] += spill->slot_bytes[s][i];
      }
    }
  }
  ::close(fd);
  return out;
}

}  // namespace tessera::node
