#include "node/metrics/spill_notices.h"

#include <sys/stat.h>

#include <map>

#include "log/log.h"
#include "node/allocation/allocation_files.h"
#include "node/metrics/region_figures.h"

namespace tessera::node {

namespace {

// "4096 MiB" from 1 MiB up, else "<n> bytes": a small spill is not shown as 0 MiB.
std::string Amount(uint64_t bytes) {
  return bytes >= (1ull << 20) ? std::to_string(bytes >> 20) + " MiB"
                               : std::to_string(bytes) + " bytes";
}

}  // namespace

std::string SpillMessage(const std::string& container, const std::vector<SpilledDevice>& devices) {
  std::string where;
  for (size_t i = 0; i < devices.size(); ++i) {
    const SpilledDevice& d = devices[i];
    if (i > 0) where += i + 1 == devices.size() ? " and " : ", ";
    where += Amount(d.spilled_bytes) + " on GPU " +
             (d.gpu_index >= 0 ? std::to_string(d.gpu_index) + " (" + d.uuid + ")" : d.uuid);
  }
  return "container " + container + " has GPU memory served from host memory, " + where +
         ": the GPU was full (node.device-memory-scaling lets the limits on it add up to more "
         "than it has), so the allocations that did not fit came from host memory. Kernels that "
         "read that memory run many times slower (over PCIe instead of the GPU's own memory). To "
         "avoid it, ask for no more GPU memory than the job needs, or run the pod where the GPU "
         "has room for all of it (a node whose scaling is 1 never spills). This is recorded once "
         "per container; tessera_container_memory_spilled_bytes follows the amount.";
}

void SpillNotices::Check(const std::vector<AllocationFolder>& folders,
                         const std::vector<GpuInfo>& gpus) {
  std::map<std::string, int> index_of;
  for (const GpuInfo& g : gpus) index_of[g.uuid] = g.index;
  // Forget the allocations whose folders are gone, so that told_ stays as small as the node.
  std::set<std::string> present;
  for (const AllocationFolder& f : folders) present.insert(f.id);
  std::erase_if(told_, [&](const std::string& id) { return !present.count(id); });
  for (const AllocationFolder& f : folders) {
    if (!f.claim.empty() || told_.count(f.id)) continue;
    const std::string marker = f.path + "/" + kSpillNoticeFile;
    struct stat st;
    if (::stat(marker.c_str(), &st) == 0) continue;  // told already
    const RegionFigures region = ReadRegionFigures(RegionDirOf(state_dir_, f.id) + "/region");
    std::vector<SpilledDevice> spilled;
    for (size_t i = 0; i < f.devices.size() && i < region.spilled.size(); ++i) {
      if (region.spilled[i] == 0) continue;
      auto it = index_of.find(f.devices[i].uuid);
      spilled.push_back(
          {f.devices[i].uuid, it == index_of.end() ? -1 : it->second, region.spilled[i]});
    }
    if (spilled.empty()) continue;
    const std::string message = SpillMessage(f.container, spilled);
    Status s = writer_.CreatePodEvent(f.ns, f.pod, "Warning", kSpillEventReason, message);
    if (!s.ok()) {
      log::Warn("cannot record that a container spills GPU memory; trying again",
                {{"pod", f.ns + "/" + f.pod}, {"container", f.container}, {"error", s.message()}});
      continue;
    }
    told_.insert(f.id);
    notices_.fetch_add(1);
    log::Info("a container's GPU memory spills to host memory",
              {{"pod", f.ns + "/" + f.pod}, {"container", f.container}});
    s = WriteFileAtomic(marker, message + "\n");
    if (!s.ok()) {
      // The folder is gone or unwritable: after a restart of the agent, the Event may be
      // recorded again.
      log::Warn("cannot remember that a container's spill was recorded",
                {{"folder", f.path}, {"error", s.message()}});
    }
  }
}

}  // namespace tessera::node
