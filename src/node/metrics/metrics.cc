#include "node/metrics/metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "abi/shared_region.h"
#include "annotations/names.h"
#include "common/metric_labels.h"
#include "common/strings.h"
#include "node/allocation/allocation_files.h"
#include "node/allocation/allocation_folders.h"

namespace tessera::node {

namespace {

struct Row {
  bool claim = false;  // a DRA claim's device, not a container's
  std::string labels;  // namespace, pod and container (claim: namespace, claim), then GpuLabels
  std::string uuid;
  uint64_t used = 0;
  uint64_t spilled = 0;           // of `used`, served from host memory
  uint64_t limit = 0;             // in force: the GPU's memory when the grant sets none
  int cores = 100;                // in force: 100 when the grant sets none
  std::optional<unsigned> share;  // compute share in percent, when known
};

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

// What the container's live processes hold on each device, and the part of it served from host
// memory (the spill appendix, abi/shared_region.h), from the region file; both empty when the
// region cannot be read, `spilled` all zero without an appendix (a library before issue 33). A
// process that exits keeps its charge until another process of the container sweeps it (the
// driver frees its memory only as it dies, docs/in-container-library.md): counting only live
// slots makes a container whose processes are all gone read 0 at once.
struct RegionFigures {
  std::vector<uint64_t> used, spilled;
};
RegionFigures ReadRegion(const std::string& path) {
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

}  // namespace

std::optional<unsigned> ContainerShare(const ProcessShares& shares, const std::string& uuid,
                                       const std::vector<uint32_t>& pids) {
  auto gpu = shares.find(uuid);
  if (gpu == shares.end()) return std::nullopt;
  double sum = 0;
  for (uint32_t pid : pids) {
    auto it = gpu->second.find(pid);
    if (it != gpu->second.end()) sum += it->second;
  }
  return static_cast<unsigned>(std::lround(std::clamp(sum, 0.0, 100.0)));
}

std::string RenderMetrics(const std::string& node, const std::string& state_dir,
                          const std::vector<GpuInfo>& gpus, const ProcessShares& shares) {
  std::map<std::string, const GpuInfo*> by_uuid;
  for (const GpuInfo& g : gpus) by_uuid[g.uuid] = &g;
  std::vector<Row> rows;
  for (const AllocationFolder& f : ReadAllocationFolders(state_dir)) {
    const RegionFigures region = ReadRegion(RegionDirOf(state_dir, f.id) + "/region");
    for (size_t i = 0; i < f.devices.size() && i < TESSERA_REGION_MAX_DEVICES; ++i) {
      const FolderDevice& d = f.devices[i];
      auto gpu = by_uuid.find(d.uuid);
      const GpuInfo* g = gpu == by_uuid.end() ? nullptr : gpu->second;
      Row row;
      row.claim = !f.claim.empty();
      row.uuid = d.uuid;
      row.labels = "namespace=\"" + PrometheusLabelValue(f.ns) + "\",";
      row.labels += row.claim ? "claim=\"" + PrometheusLabelValue(f.claim) + "\""
                              : "pod=\"" + PrometheusLabelValue(f.pod) + "\",container=\"" +
                                    PrometheusLabelValue(f.container) + "\"";
      row.labels += "," + GpuLabels(node, g ? g->index : -1, d.uuid, g ? g->model : "");
      // "No limit" is the whole GPU, so that used / limit never divides by zero.
      row.limit = d.memory_bytes != 0 ? d.memory_bytes : g ? g->memory_mib << 20 : 0;
      row.cores = d.cores > 0 && d.cores < 100 ? d.cores : 100;
      row.used = i < region.used.size() ? region.used[i] : 0;
      row.spilled = i < region.spilled.size() ? region.spilled[i] : 0;
      if (f.host_pids) row.share = ContainerShare(shares, row.uuid, *f.host_pids);
      rows.push_back(std::move(row));
    }
  }
  std::ostringstream out;
  // One gauge family over the containers' (or the claims') rows; a row whose value is nullopt
  // has no sample.
  auto family = [&](bool claims, const char* name, const char* help, auto value) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
    for (const Row& r : rows) {
      if (r.claim != claims) continue;
      if (std::optional<uint64_t> v = value(r))
        out << name << "{" << r.labels << "} " << *v << "\n";
    }
  };
  auto used = [](const Row& r) { return std::optional<uint64_t>(r.used); };
  auto spilled = [](const Row& r) { return std::optional<uint64_t>(r.spilled); };
  auto limit = [](const Row& r) { return std::optional<uint64_t>(r.limit); };
  auto cores = [](const Row& r) { return std::optional<uint64_t>(r.cores); };
  auto share = [](const Row& r) {
    return r.share ? std::optional<uint64_t>(*r.share) : std::nullopt;
  };
  family(false, "tessera_container_memory_used_bytes", "GPU memory the container uses, per device.",
         used);
  family(false, "tessera_container_memory_spilled_bytes",
         "Of the GPU memory the container uses, the part served from host memory "
         "(node.device-memory-scaling above 1), per device.",
         spilled);
  family(false, "tessera_container_memory_limit_bytes",
         "The container's memory limit on the device (the GPU's memory when it has none).", limit);
  family(false, "tessera_container_compute_limit_percent",
         "The container's compute limit, percent of the GPU's time (100 when it has none).", cores);
  family(true, "tessera_claim_memory_used_bytes",
         "GPU memory the processes of every pod that uses the DRA claim use together.", used);
  family(true, "tessera_claim_memory_spilled_bytes",
         "Of the GPU memory the DRA claim's processes use, the part served from host memory.",
         spilled);
  family(true, "tessera_claim_memory_limit_bytes",
         "The DRA claim's memory on the device (the GPU's memory when it has none).", limit);
  family(true, "tessera_claim_compute_limit_percent",
         "The DRA claim's cores, percent of the GPU's time (100 when it has none).", cores);
  family(false, "tessera_container_compute_share_percent",
         "Percent of the GPU's time the container's processes used over the last 5 s of "
         "NVML's samples.",
         share);
  family(true, "tessera_claim_compute_share_percent",
         "Percent of the GPU's time the processes of every pod that uses the DRA claim used "
         "together over the last 5 s of NVML's samples.",
         share);
  std::map<std::string, uint64_t> by_gpu;
  for (const Row& r : rows) by_gpu[r.uuid] += r.used;
  auto per_gpu = [&](const char* name, const char* help, auto value) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
    for (const GpuInfo& g : gpus) {
      out << name << "{" << GpuLabels(node, g.index, g.uuid, g.model) << "} " << value(g) << "\n";
    }
  };
  per_gpu("tessera_gpu_memory_total_bytes", "Memory of the GPU.",
          [](const GpuInfo& g) { return g.memory_mib << 20; });
  per_gpu("tessera_gpu_memory_virtual_total_bytes",
          "Virtual memory of the GPU: its memory times node.device-memory-scaling, what its "
          "containers' limits may add up to.",
          [](const GpuInfo& g) { return g.virtual_memory_mib() << 20; });
  per_gpu("tessera_gpu_memory_used_by_containers_bytes",
          "Sum of the containers' and DRA claims' use.",
          [&](const GpuInfo& g) { return by_gpu[g.uuid]; });
  per_gpu("tessera_gpu_healthy", "1 when the GPU is healthy.",
          [](const GpuInfo& g) { return g.healthy ? 1 : 0; });
  return out.str();
}

void RenderUnverified(std::string& out, const annotations::Signing& signing) {
  signing.RenderRefused(out, "tessera_node_unverified_annotations_total",
                        {annotations::kAllocation, annotations::kAllocated});
}

void RenderMemoryGuard(std::string& out, const MemoryGuard* guard) {
  if (!guard) return;
  out +=
      "# HELP tessera_node_memory_overuses_total Containers the host-side check found holding "
      "more GPU memory than their limit (once per episode).\n"
      "# TYPE tessera_node_memory_overuses_total counter\n"
      "tessera_node_memory_overuses_total " +
      std::to_string(guard->overuses()) + "\n";
  out +=
      "# HELP tessera_node_memory_guard_kills_total Processes the host-side check killed.\n"
      "# TYPE tessera_node_memory_guard_kills_total counter\n"
      "tessera_node_memory_guard_kills_total " +
      std::to_string(guard->kills()) + "\n";
}

}  // namespace tessera::node
