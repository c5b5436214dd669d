#include "annotations/charges.h"

#include <algorithm>

namespace tessera::annotations {

std::vector<GpuCharge> ChargesOf(const Allocation& allocation) {
  struct Acc {
    GpuCharge app;
    GpuCharge init;
  };
  std::vector<Acc> acc;
  for (const ContainerAllocation& c : allocation.containers) {
    for (const DeviceAllocation& d : c.devices) {
      auto it =
          std::find_if(acc.begin(), acc.end(), [&](const Acc& a) { return a.app.uuid == d.uuid; });
      if (it == acc.end()) {
        acc.push_back({});
        it = acc.end() - 1;
        it->app.uuid = d.uuid;
      }
      if (c.init) {
        it->init.memory_mib = std::max(it->init.memory_mib, d.memory_mib);
        it->init.cores = std::max(it->init.cores, d.cores);
        it->init.slots = std::max(it->init.slots, c.slot ? 1 : 0);
        it->init.exclusive = it->init.exclusive || d.exclusive;
      } else {
        it->app.memory_mib += d.memory_mib;
        it->app.cores = std::min(100, it->app.cores + d.cores);
        it->app.slots += c.slot ? 1 : 0;
        it->app.exclusive = it->app.exclusive || d.exclusive;
      }
    }
  }
  std::vector<GpuCharge> out;
  out.reserve(acc.size());
  for (const Acc& a : acc) {
    out.push_back({a.app.uuid, std::max(a.app.memory_mib, a.init.memory_mib),
                   std::max(a.app.cores, a.init.cores), a.app.exclusive || a.init.exclusive,
                   std::max(a.app.slots, a.init.slots)});
  }
  return out;
}

}  // namespace tessera::annotations
