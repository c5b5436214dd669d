#include "node/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <sstream>

#include "abi/shared_region.h"
#include "annotations/names.h"
#include "common/metric_labels.h"
#include "common/strings.h"
#include "node/allocation/allocation_files.h"
#include "node/allocation/allocation_folders.h"
#include "node/metrics/region_figures.h"

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

// The MIG families: the MIG mode of each MIG-capable GPU, and per MIG device its memory, SMs,
// the containers' use and health. Nothing on a node without MIG-capable GPUs.
void RenderMig(std::ostringstream& out, const std::string& node, const std::vector<GpuInfo>& gpus,
               std::map<std::string, uint64_t>& used) {
  const bool capable =
      std::any_of(gpus.begin(), gpus.end(), [](const GpuInfo& g) { return g.mig.capable; });
  if (!capable) return;
  auto head = [&](const char* name, const char* help) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
  };
  head("tessera_gpu_mig_enabled",
       "1 when the GPU is in MIG mode now; pending=\"1\" when it will be after a GPU reset.");
  for (const GpuInfo& g : gpus) {
    if (!g.mig.capable) continue;
    out << "tessera_gpu_mig_enabled{" << GpuLabels(node, g.index, g.uuid, g.model) << ",mode=\""
        << MigModeName(g.mig.mode) << "\",pending=\"" << (g.mig.pending ? 1 : 0) << "\"} "
        << (g.mig.enabled ? 1 : 0) << "\n";
  }
  auto per_instance = [&](const char* name, const char* help, auto value) {
    head(name, help);
    for (const GpuInfo& g : gpus) {
      for (const MigInstanceInfo& m : g.mig.instances) {
        out << name << "{" << GpuLabels(node, g.index, g.uuid, g.model) << ",mig_uuid=\""
            << PrometheusLabelValue(m.uuid) << "\",profile=\""
            << PrometheusLabelValue(m.device_name) << "\",placement=\"" << m.start << ":" << m.size
            << "\"} " << value(g, m) << "\n";
      }
    }
  };
  per_instance("tessera_mig_instance_memory_total_bytes",
               "Memory of the MIG device's GPU instance.",
               [](const GpuInfo&, const MigInstanceInfo& m) { return m.memory_mib << 20; });
  per_instance("tessera_mig_instance_sms", "Streaming multiprocessors of the MIG device.",
               [](const GpuInfo&, const MigInstanceInfo& m) { return m.sms; });
  per_instance("tessera_mig_instance_memory_used_by_containers_bytes",
               "Sum of the use of the containers and DRA claims given the MIG device.",
               [&](const GpuInfo&, const MigInstanceInfo& m) { return used[m.uuid]; });
  per_instance(
      "tessera_mig_instance_healthy", "1 when the MIG device and its GPU are healthy.",
      [](const GpuInfo& g, const MigInstanceInfo& m) { return g.healthy && m.healthy ? 1 : 0; });
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
    const RegionFigures region = ReadRegionFigures(RegionDirOf(state_dir, f.id) + "/region");
    for (size_t i = 0; i < f.devices.size() && i < TESSERA_REGION_MAX_DEVICES; ++i) {
      const FolderDevice& d = f.devices[i];
      auto gpu = by_uuid.find(d.uuid);
      const GpuInfo* g = gpu == by_uuid.end() ? nullptr : gpu->second;
      // A MIG device: its GPU's index and model, its GPU instance's memory.
      const MigDeviceRef mig = g == nullptr ? FindMigDevice(gpus, d.uuid) : MigDeviceRef{};
      if (mig.gpu != nullptr) g = mig.gpu;
      const uint64_t whole = mig.instance ? mig.instance->memory_mib << 20
                             : g          ? g->memory_mib << 20
                                          : 0;
      Row row;
      row.claim = !f.claim.empty();
      row.uuid = d.uuid;
      row.labels = "namespace=\"" + PrometheusLabelValue(f.ns) + "\",";
      row.labels += row.claim ? "claim=\"" + PrometheusLabelValue(f.claim) + "\""
                              : "pod=\"" + PrometheusLabelValue(f.pod) + "\",container=\"" +
                                    PrometheusLabelValue(f.container) + "\"";
      row.labels += "," + GpuLabels(node, g ? g->index : -1, d.uuid, g ? g->model : "");
      // "No limit" is the whole GPU, so that used / limit never divides by zero.
      row.limit = d.memory_bytes != 0 ? d.memory_bytes : whole;
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
  // A GPU's figure counts the use of its MIG devices (rows name the MIG device's UUID).
  std::map<std::string, uint64_t> with_mig = by_gpu;
  for (const GpuInfo& g : gpus) {
    for (const MigInstanceInfo& m : g.mig.instances) {
      if (auto it = by_gpu.find(m.uuid); it != by_gpu.end()) with_mig[g.uuid] += it->second;
    }
  }
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
          "Sum of the containers' and DRA claims' use, its MIG devices' included.",
          [&](const GpuInfo& g) { return with_mig[g.uuid]; });
  per_gpu("tessera_gpu_healthy", "1 when the GPU is healthy.",
          [](const GpuInfo& g) { return g.healthy ? 1 : 0; });
  RenderMig(out, node, gpus, by_gpu);
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
