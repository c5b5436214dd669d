#include "node/enforcement/memory_guard.h"

#include <algorithm>

#include "common/strings.h"
#include "log/log.h"

namespace tessera::node {
namespace {

std::string Mib(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

std::string Key(const GuardedContainer& c) {
  return c.allocation + "/" + c.uuid;
}

}  // namespace

std::vector<GuardedContainer> GuardedContainers(const std::vector<AllocationFolder>& folders,
                                                const std::map<std::string, std::string>& cgroups) {
  std::vector<GuardedContainer> out;
  for (const AllocationFolder& f : folders) {
    if (!f.host_pids) continue;
    auto cgroup = cgroups.find(f.id);
    for (const FolderDevice& d : f.devices) {
      if (d.memory_bytes == 0) continue;
      out.push_back({.allocation = f.id,
                     .ns = f.ns,
                     .pod = f.pod,
                     .container = f.container,
                     .uuid = d.uuid,
                     // A shrunk limit is a ceiling for new allocations; what was held before
                     // it is not taken away (docs/resize.md).
                     .limit_bytes = std::max(d.memory_bytes, d.guard_floor_bytes),
                     .host_pids = *f.host_pids,
                     .cgroup_dir = cgroup == cgroups.end() ? "" : cgroup->second});
    }
  }
  return out;
}

std::vector<Overuse> FindOveruse(const std::vector<GuardedContainer>& containers,
                                 const ProcessMemory& memory, uint64_t tolerance) {
  std::vector<Overuse> out;
  for (const GuardedContainer& c : containers) {
    if (c.limit_bytes == 0) continue;
    auto gpu = memory.find(c.uuid);
    if (gpu == memory.end()) continue;
    Overuse o{.container = c};
    for (uint32_t pid : c.host_pids) {
      auto it = gpu->second.find(pid);
      if (it == gpu->second.end()) continue;
      o.used_bytes += it->second;
      o.processes.emplace_back(pid, it->second);
    }
    if (o.used_bytes <= c.limit_bytes + tolerance) continue;
    std::stable_sort(o.processes.begin(), o.processes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<uint32_t> ProcessesToStop(const Overuse& overuse) {
  std::vector<uint32_t> stop;
  uint64_t left = overuse.used_bytes;
  for (const auto& [pid, bytes] : overuse.processes) {
    if (left <= overuse.container.limit_bytes) break;
    stop.push_back(pid);
    left -= bytes;
  }
  return stop;
}

MemoryGuard::MemoryGuard(GuardOptions options, GuardActions& actions)
    : options_(options), actions_(actions) {}

void MemoryGuard::Check(const std::vector<GuardedContainer>& containers,
                        const ProcessMemory& memory) {
  std::map<std::string, int> strikes;
  for (const Overuse& o : FindOveruse(containers, memory, options_.tolerance)) {
    const std::string key = Key(o.container);
    int count = strikes_.count(key) ? strikes_[key] + 1 : 1;
    strikes[key] = count;
    if (count == options_.strikes) {
      overuses_.fetch_add(1);
      Act(o);
    } else if (count > options_.strikes && options_.action == GuardAction::kKill) {
      Act(o);  // still over: what was killed did not free enough, or new processes took it
    }
  }
  // A container back under its limit starts counting from zero again.
  strikes_ = std::move(strikes);
}

void MemoryGuard::Act(const Overuse& o) {
  const GuardedContainer& c = o.container;
  std::string what = "container " + c.container + " holds " + Mib(o.used_bytes) + " of GPU " +
                     c.uuid + ", over its limit of " + Mib(c.limit_bytes) +
                     " (as the driver reports its processes)";
  std::string killed = "none (action report)";
  if (options_.action == GuardAction::kKill) {
    std::vector<std::string> pids;
    for (uint32_t pid : ProcessesToStop(o)) {
      if (!c.cgroup_dir.empty() && actions_.Kill(pid, c.cgroup_dir)) {
        kills_.fetch_add(1);
        pids.push_back(std::to_string(pid));
      }
    }
    killed = pids.empty() ? "none" : Join(pids, ",");
  }
  log::Warn("GPU memory over the container's limit",
            {{"pod", c.ns + "/" + c.pod},
             {"container", c.container},
             {"gpu", c.uuid},
             {"used-bytes", std::to_string(o.used_bytes)},
             {"limit-bytes", std::to_string(c.limit_bytes)},
             {"killed-host-pids", killed}});
  actions_.Event(c.ns, c.pod, "GPUMemoryOverLimit", what + "; killed host PIDs: " + killed);
}

}  // namespace tessera::node
