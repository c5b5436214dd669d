#include "node/metrics/metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "abi/host_pids.h"
#include "abi/shared_region.h"
#include "common/strings.h"

namespace tessera::node {

namespace {

struct Row {
  std::string labels;  // namespace="..",pod="..",container="..",gpu=".."
  std::string uuid;
  uint64_t used = 0, limit = 0;
  int cores = 0;
  std::optional<unsigned> share;  // compute share in percent, when known
};

// used_bytes of each container device from the region file, or empty.
std::vector<uint64_t> RegionUsed(const std::string& path) {
  std::vector<uint64_t> used;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return used;
  constexpr size_t kHeader = offsetof(tessera_region, slots);
  std::string buf(kHeader, '\0');
  ssize_t n = ::pread(fd, buf.data(), kHeader, 0);
  ::close(fd);
  if (n != static_cast<ssize_t>(kHeader)) return used;
  const auto* r = reinterpret_cast<const tessera_region*>(buf.data());
  if (r->magic != TESSERA_REGION_MAGIC || r->version != TESSERA_REGION_VERSION) return used;
  for (int i = 0; i < TESSERA_REGION_MAX_DEVICES; ++i) used.push_back(r->devices[i].used_bytes);
  return used;
}

// The host PIDs of the pids file at `path` (src/abi/host_pids.h), or nullopt when it is missing
// or of another version.
std::optional<std::vector<uint32_t>> HostPids(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != "version=" + std::to_string(TESSERA_PIDS_VERSION)) {
    return std::nullopt;
  }
  std::vector<uint32_t> pids;
  for (unsigned long host = 0; in >> host && std::getline(in, line);) {
    pids.push_back(static_cast<uint32_t>(host));
  }
  return pids;
}

// What the processes `pids` used of GPU `uuid`, or nullopt when `shares` does not know the GPU.
std::optional<unsigned> ContainerShare(const ProcessShares& shares, const std::string& uuid,
                                       const std::vector<uint32_t>& pids) {
  auto gpu = shares.find(uuid);
  if (gpu == shares.end()) return std::nullopt;
  unsigned sum = 0;
  for (uint32_t pid : pids) {
    auto it = gpu->second.find(pid);
    if (it != gpu->second.end()) sum += it->second;
  }
  return std::min(sum, 100u);
}

}  // namespace

std::string RenderMetrics(const std::string& state_dir, const std::vector<GpuInfo>& gpus,
                          const ProcessShares& shares) {
  namespace fs = std::filesystem;
  std::vector<Row> rows;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(state_dir + "/allocations", ec)) {
    std::ifstream owner_in(e.path() / "owner.json");
    nlohmann::json owner = nlohmann::json::parse(owner_in, nullptr, false);
    if (!owner.is_object() || owner.value("pod", "").empty()) continue;
    std::ifstream limits_in(e.path() / "limits");
    std::map<std::string, std::string> kv;
    for (std::string line; std::getline(limits_in, line);) {
      size_t eq = line.find('=');
      if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
    std::vector<uint64_t> used =
        RegionUsed(state_dir + "/regions/" + e.path().filename().string() + "/region");
    std::optional<std::vector<uint32_t>> pids = HostPids(e.path() / TESSERA_PIDS_FILE_NAME);
    int devices = std::atoi(kv["devices"].c_str());
    for (int i = 0; i < devices && i < TESSERA_REGION_MAX_DEVICES; ++i) {
      std::string n = std::to_string(i);
      Row row;
      row.uuid = kv["uuid." + n];
      row.labels = "namespace=\"" + PrometheusLabelValue(owner.value("namespace", "")) +
                   "\",pod=\"" + PrometheusLabelValue(owner.value("pod", "")) + "\",container=\"" +
                   PrometheusLabelValue(owner.value("container", "")) + "\",gpu=\"" +
                   PrometheusLabelValue(row.uuid) + "\"";
      row.limit = std::strtoull(kv["memory." + n].c_str(), nullptr, 10);
      row.cores = std::atoi(kv["cores." + n].c_str());
      row.used = static_cast<size_t>(i) < used.size() ? used[static_cast<size_t>(i)] : 0;
      if (pids) row.share = ContainerShare(shares, row.uuid, *pids);
      rows.push_back(std::move(row));
    }
  }
  std::ostringstream out;
  auto family = [&](const char* name, const char* help, auto value) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
    for (const Row& r : rows) out << name << "{" << r.labels << "} " << value(r) << "\n";
  };
  family("tessera_container_memory_used_bytes", "GPU memory the container uses, per device.",
         [](const Row& r) { return r.used; });
  family("tessera_container_memory_limit_bytes", "The container's memory limit (0 = none).",
         [](const Row& r) { return r.limit; });
  family("tessera_container_compute_limit_percent",
         "The container's compute limit, percent of the GPU's time (0 or 100 = none).",
         [](const Row& r) { return static_cast<uint64_t>(r.cores); });
  out << "# HELP tessera_container_compute_share_percent Percent of the GPU's time the container's "
         "processes used in NVML's latest samples.\n"
         "# TYPE tessera_container_compute_share_percent gauge\n";
  for (const Row& r : rows) {
    if (r.share) {
      out << "tessera_container_compute_share_percent{" << r.labels << "} " << *r.share << "\n";
    }
  }
  std::map<std::string, uint64_t> by_gpu;
  for (const Row& r : rows) by_gpu[r.uuid] += r.used;
  out << "# HELP tessera_gpu_memory_total_bytes Memory of the GPU.\n"
         "# TYPE tessera_gpu_memory_total_bytes gauge\n";
  for (const GpuInfo& g : gpus) {
    out << "tessera_gpu_memory_total_bytes{gpu=\"" << PrometheusLabelValue(g.uuid) << "\",index=\""
        << g.index << "\",model=\"" << PrometheusLabelValue(g.model) << "\"} "
        << g.memory_mib * 1024 * 1024 << "\n";
  }
  out << "# HELP tessera_gpu_memory_used_by_containers_bytes Sum of the containers' use.\n"
         "# TYPE tessera_gpu_memory_used_by_containers_bytes gauge\n";
  for (const GpuInfo& g : gpus) {
    out << "tessera_gpu_memory_used_by_containers_bytes{gpu=\"" << PrometheusLabelValue(g.uuid)
        << "\"} " << by_gpu[g.uuid] << "\n";
  }
  out << "# HELP tessera_gpu_healthy 1 when the GPU is healthy.\n"
         "# TYPE tessera_gpu_healthy gauge\n";
  for (const GpuInfo& g : gpus) {
    out << "tessera_gpu_healthy{gpu=\"" << PrometheusLabelValue(g.uuid) << "\"} "
        << (g.healthy ? 1 : 0) << "\n";
  }
  return out.str();
}

}  // namespace tessera::node
