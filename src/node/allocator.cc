#include "node/allocator.h"

#include <algorithm>
#include <set>
#include <thread>

#include "log/log.h"
#include "node/allocation_files.h"

namespace tessera::node {

using nlohmann::json;

Allocator::Allocator(AllocatorOptions options, std::vector<ResourceSpec> resources, PodSource& pods,
                     ApiWriter& writer, PodResourcesSource& kubelet)
    : options_(std::move(options)),
      resources_(std::move(resources)),
      pods_(pods),
      writer_(writer),
      kubelet_(kubelet) {}

Status Allocator::Init() {
  RETURN_IF_ERROR(MakeDirs(options_.state_dir + "/allocations"));
  RETURN_IF_ERROR(MakeDirs(options_.state_dir + "/regions"));
  if (options_.cdi) RETURN_IF_ERROR(MakeDirs(options_.cdi_dir));
  return WriteFileAtomic(options_.state_dir + "/ld.so.preload",
                         std::string(kContainerLibraryPath) + "\n");
}

void Allocator::SetGpus(std::vector<GpuInfo> gpus) {
  std::lock_guard lock(mu_);
  gpus_ = std::move(gpus);
}

std::vector<GpuInfo> Allocator::Gpus() const {
  std::lock_guard lock(mu_);
  return gpus_;
}

void Allocator::Forget(const std::string& id) {
  std::lock_guard lock(mu_);
  SetGuessLocked(id, std::nullopt);
}

void Allocator::SetGuessLocked(const std::string& id, std::optional<Guess> guess) {
  auto it = guesses_.find(id);
  if (it != guesses_.end()) {
    const Guess& old = it->second;
    if (auto owned = owners_.find(old.owner.uid); owned != owners_.end()) {
      auto& entries = owned->second;
      auto entry = std::find(entries.begin(), entries.end(),
                             std::make_pair(old.resource, old.owner.container));
      if (entry != entries.end()) entries.erase(entry);
      if (entries.empty()) owners_.erase(owned);
    }
    if (!guess) {
      guesses_.erase(it);
      return;
    }
  }
  if (!guess) return;
  if (!guess->owner.uid.empty()) {
    owners_[guess->owner.uid].emplace_back(guess->resource, guess->owner.container);
  }
  guesses_[id] = std::move(*guess);
}

std::string Allocator::AllocationDir(const std::string& id) const {
  return options_.state_dir + "/allocations/" + id;
}

std::string Allocator::CdiSpecPath(const std::string& id) const {
  return options_.cdi_dir + "/tessera.io-container-" + id + ".json";
}

const ResourceSpec* Allocator::FindResource(const std::string& name) const {
  for (const ResourceSpec& r : resources_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::vector<ContainerRef> Allocator::Candidates(const std::vector<PodRef>& pods,
                                                const std::string& resource, int64_t count) const {
  std::lock_guard lock(mu_);
  return AllocateCandidates(pods, resource, count, [&](const ContainerRef& c) {
    auto owned = owners_.find(c.uid);
    return owned != owners_.end() &&
           std::find(owned->second.begin(), owned->second.end(),
                     std::make_pair(resource, c.container)) != owned->second.end();
  });
}

namespace {

// The grant of a pod that has no decision: the whole GPUs behind the device IDs, by index (kubelet
// passes the IDs in random order; the container's device order must not change between calls).
Result<Grant> WholeGpus(const std::vector<std::string>& device_ids,
                        const std::vector<GpuInfo>& gpus) {
  std::set<int> indexes;
  for (const std::string& id : device_ids) {
    std::optional<int> index = GpuIndexOfDevice(id);
    if (!index) return InvalidArgument("device ID \"" + id + "\" is not of the form <gpu>-<unit>");
    indexes.insert(*index);
  }
  Grant g;
  for (int index : indexes) {
    auto it = std::find_if(gpus.begin(), gpus.end(),
                           [&](const GpuInfo& gpu) { return gpu.index == index; });
    if (it == gpus.end()) {
      return NotFound("GPU " + std::to_string(index) + " of the device IDs is not on this node");
    }
    g.devices.push_back({it->uuid, 0, 0});
  }
  return g;
}

Status CheckGrant(const Grant& grant, const std::vector<GpuInfo>& gpus) {
  std::set<std::string> seen;
  for (const GrantDevice& d : grant.devices) {
    const GpuInfo* g = FindGpu(gpus, d.uuid);
    if (g == nullptr) return NotFound("GPU " + d.uuid + " is not on this node");
    if (!seen.insert(d.uuid).second) return InvalidArgument("GPU " + d.uuid + " is listed twice");
    if (d.memory_mib > g->memory_mib) {
      return ResourceExhausted("GPU " + d.uuid + " has " + std::to_string(g->memory_mib) +
                               " MiB, the decision gives " + std::to_string(d.memory_mib) + " MiB");
    }
  }
  return Status::Ok();
}

std::vector<std::string> Uuids(const Grant& g) {
  std::vector<std::string> out;
  for (const GrantDevice& d : g.devices) out.push_back(d.uuid);
  return out;
}

// The pod of `c` among `pods` (by UID), or nullptr.
PodRef PodOf(const std::vector<PodRef>& pods, const ContainerRef& c) {
  if (c.uid.empty()) return nullptr;
  for (const PodRef& p : pods) {
    if (PodUid(*p) == c.uid) return p;
  }
  return nullptr;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

Result<Grant> Allocator::GrantFor(const json& pod, const ContainerRef& owner,
                                  const std::vector<std::string>& device_ids,
                                  const std::vector<GpuInfo>& gpus) const {
  std::string decision = PodAnnotation(pod, kAllocationAnnotation);
  if (decision.empty()) return WholeGpus(device_ids, gpus);
  ASSIGN_OR_RETURN(std::optional<Grant> grant,
                   GrantFromAllocation(decision, owner.container, options_.node_name));
  if (!grant) {
    return FailedPrecondition(std::string(kAllocationAnnotation) + " lists no container \"" +
                              owner.container + "\"");
  }
  RETURN_IF_ERROR(CheckGrant(*grant, gpus));
  return *grant;
}

std::vector<std::string> Allocator::Preferred(const std::string& resource,
                                              const std::vector<std::string>& available,
                                              const std::vector<std::string>& must_include,
                                              int size) {
  std::vector<std::string> out;
  std::set<std::string> chosen;
  for (const std::string& id : must_include) {
    if (static_cast<int>(out.size()) < size && chosen.insert(id).second) out.push_back(id);
  }
  std::map<int, std::vector<std::string>> pool;  // GPU index -> free IDs, in kubelet's order
  for (const std::string& id : available) {
    std::optional<int> index = GpuIndexOfDevice(id);
    if (index && chosen.count(id) == 0) pool[*index].push_back(id);
  }
  auto take_round_robin = [&](std::vector<int> order) {
    std::map<int, size_t> next;
    bool progress = true;
    while (static_cast<int>(out.size()) < size && progress) {
      progress = false;
      for (int index : order) {
        auto& ids = pool[index];
        if (static_cast<int>(out.size()) >= size || next[index] >= ids.size()) continue;
        out.push_back(ids[next[index]]);
        ids.erase(ids.begin() + static_cast<long>(next[index]));
        progress = true;
      }
    }
  };
  // The likeliest pending container's GPUs first.
  std::vector<GpuInfo> gpus = Gpus();
  std::vector<PodRef> pods = pods_.NodePods();
  std::vector<ContainerRef> cands = Candidates(pods, resource, size);
  PodRef likeliest = cands.empty() ? nullptr : PodOf(pods, cands.front());
  if (likeliest) {
    Result<Grant> grant = GrantFor(*likeliest, cands.front(), {}, gpus);
    if (grant.ok()) {
      std::vector<int> order;
      for (const GrantDevice& d : grant->devices) {
        if (const GpuInfo* g = FindGpu(gpus, d.uuid)) order.push_back(g->index);
      }
      take_round_robin(order);
    }
  }
  // Then the GPUs with the most free IDs: one ID per GPU for vGPU slots (distinct GPUs), packed
  // otherwise.
  std::vector<int> rest;
  for (const auto& [index, ids] : pool) {
    if (!ids.empty()) rest.push_back(index);
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [&](int a, int b) { return pool[a].size() > pool[b].size(); });
  const ResourceSpec* spec = FindResource(resource);
  if (spec != nullptr && spec->kind == ResourceKind::kVgpuSlots) {
    take_round_robin(rest);
  } else {
    for (int index : rest) {
      for (const std::string& id : pool[index]) {
        if (static_cast<int>(out.size()) < size) out.push_back(id);
      }
    }
  }
  return out;
}

Result<AllocateAnswer> Allocator::Allocate(const std::string& resource,
                                           const std::vector<std::string>& device_ids) {
  const ResourceSpec* spec = FindResource(resource);
  if (spec == nullptr) return InvalidArgument("resource " + resource + " is not served here");
  std::lock_guard serial(allocate_mu_);
  AllocateAnswer answer;
  answer.allocation_id = AllocationId(resource, device_ids);
  const std::string& id = answer.allocation_id;

  std::vector<PodRef> pods = pods_.NodePods();
  std::vector<ContainerRef> cands =
      Candidates(pods, resource, static_cast<int64_t>(device_ids.size()));
  auto deadline = std::chrono::steady_clock::now() + options_.owner_wait;
  while (cands.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pods = pods_.NodePods();
    cands = Candidates(pods, resource, static_cast<int64_t>(device_ids.size()));
  }
  if (cands.size() > 1) {
    // Several candidates: drop those kubelet has already given devices of this resource.
    Result<std::vector<ContainerDevices>> listed = kubelet_.List();
    if (listed.ok()) {
      std::erase_if(cands, [&](const ContainerRef& c) {
        return std::any_of(listed->begin(), listed->end(), [&](const ContainerDevices& d) {
          return d.ns == c.ns && d.pod == c.pod && d.container == c.container &&
                 d.resource == resource;
        });
      });
    }
  }
  Guess guess;
  guess.resource = resource;
  PodRef owner_pod;
  if (!cands.empty()) {
    guess.owner = cands.front();
    owner_pod = PodOf(pods, guess.owner);
  }
  if (!spec->served_by.empty() && owner_pod) {
    const json* c = FindContainer(*owner_pod, guess.owner.container);
    guess.counts_only = c != nullptr && ContainerRequest(*c, spec->served_by) > 0;
  }
  if (!guess.counts_only) {
    std::vector<GpuInfo> gpus = Gpus();
    Grant grant;
    if (owner_pod) {
      Result<Grant> g = GrantFor(*owner_pod, guess.owner, device_ids, gpus);
      if (g.ok()) {
        grant = *g;
      } else {
        log::Warn("allocate: no usable decision for the likeliest pod, writing no GPU for now",
                  {{"allocation", id},
                   {"pod", guess.owner.ToString()},
                   {"reason", g.status().message()}});
      }
    }
    RETURN_IF_ERROR(WriteFiles(id, grant, guess.owner, gpus));
    guess.visible = Uuids(grant);
    answer.mounts = {
        {kContainerAllocationDir, AllocationDir(id), true},
        {kContainerLibraryPath, options_.library_path, true},
        {"/etc/ld.so.preload", options_.state_dir + "/ld.so.preload", true},
        {kContainerRegionDir, options_.state_dir + "/regions/" + id, false},
    };
    if (options_.cdi) {
      answer.cdi_device = CdiDeviceName(id);
    } else {
      answer.envs["NVIDIA_VISIBLE_DEVICES"] = guess.visible.empty() ? "void" : Join(guess.visible);
    }
  }
  log::Debug("allocate", {{"resource", resource},
                          {"allocation", id},
                          {"guess", guess.owner.uid.empty() ? "none" : guess.owner.ToString()}});
  std::lock_guard lock(mu_);
  SetGuessLocked(id, std::move(guess));
  return answer;
}

Status Allocator::PreStart(const std::string& resource,
                           const std::vector<std::string>& device_ids) {
  const ResourceSpec* spec = FindResource(resource);
  if (spec == nullptr) return InvalidArgument("resource " + resource + " is not served here");
  std::string id = AllocationId(resource, device_ids);
  std::optional<Guess> guess;
  {
    std::lock_guard lock(mu_);
    auto it = guesses_.find(id);
    if (it != guesses_.end()) guess = it->second;
  }

  // The owner, from kubelet; the guess made at Allocate when kubelet cannot tell (plain init
  // containers are not listed).
  std::set<std::string> wanted(device_ids.begin(), device_ids.end());
  ContainerRef owner;
  bool counts_only = guess && guess->counts_only;
  Result<std::vector<ContainerDevices>> listed = kubelet_.List();
  if (listed.ok()) {
    for (const ContainerDevices& d : *listed) {
      if (d.resource != resource ||
          std::set<std::string>(d.device_ids.begin(), d.device_ids.end()) != wanted) {
        continue;
      }
      owner = {d.ns, d.pod, "", d.container};
      counts_only = false;
      for (const ContainerDevices& other : *listed) {
        if (other.ns == d.ns && other.pod == d.pod && other.container == d.container &&
            !spec->served_by.empty() && other.resource == spec->served_by) {
          counts_only = true;
        }
      }
    }
  } else {
    log::Warn("prestart: PodResources lookup failed, using the guess made at Allocate",
              {{"allocation", id}, {"error", listed.status().message()}});
  }
  if (owner.pod.empty() && guess && !guess->owner.uid.empty()) owner = guess->owner;
  if (owner.pod.empty()) {
    return FailedPrecondition("no pod owns " + resource + " devices " + Join(device_ids) +
                              " (allocation " + id +
                              "): kubelet does not list them and no "
                              "pending pod of this node asks for them");
  }
  if (counts_only) return Status::Ok();
  PodRef pod = pods_.FindPod(owner.ns, owner.pod);
  if (!pod) {
    return Unavailable("pod " + owner.ns + "/" + owner.pod +
                       " is not in the node agent's pod cache yet; kubelet will retry");
  }
  owner.uid = PodUid(*pod);

  std::vector<GpuInfo> gpus = Gpus();
  Result<Grant> grant = GrantFor(*pod, owner, device_ids, gpus);
  if (!grant.ok()) return Fail(owner, grant.status().message());
  if (!options_.cdi && guess && Uuids(*grant) != guess->visible) {
    return Fail(owner, "NVIDIA_VISIBLE_DEVICES was set at Allocate to \"" + Join(guess->visible) +
                           "\" but the decision is \"" + Join(Uuids(*grant)) +
                           "\" (enable CDI: node.cdi=true)");
  }
  RETURN_IF_ERROR(WriteFiles(id, *grant, owner, gpus));
  Status recorded = RecordAllocated(owner, id, *grant);
  if (!recorded.ok()) {
    log::Warn("prestart: could not record tessera.io/allocated",
              {{"pod", owner.ToString()}, {"error", recorded.message()}});
  }
  std::lock_guard lock(mu_);
  auto it = guesses_.find(id);
  Guess found = it != guesses_.end() ? it->second : Guess{};
  found.resource = resource;
  found.owner = owner;
  found.counts_only = false;
  SetGuessLocked(id, std::move(found));
  return Status::Ok();
}

Status Allocator::WriteFiles(const std::string& id, const Grant& grant, const ContainerRef& owner,
                             const std::vector<GpuInfo>& gpus) {
  std::string dir = AllocationDir(id);
  RETURN_IF_ERROR(MakeDir(dir));
  RETURN_IF_ERROR(MakeDir(options_.state_dir + "/regions/" + id));
  json who = {{"namespace", owner.ns},
              {"pod", owner.pod},
              {"uid", owner.uid},
              {"container", owner.container}};
  RETURN_IF_ERROR(UpdateFileAtomic(dir + "/owner.json", who.dump() + "\n"));
  RETURN_IF_ERROR(UpdateFileAtomic(dir + "/limits", LimitsText(grant)));
  if (!options_.cdi) return Status::Ok();
  ASSIGN_OR_RETURN(std::string spec, CdiSpecText(id, grant, gpus, options_.driver_root));
  return UpdateFileAtomic(CdiSpecPath(id), spec);
}

namespace {

// The pod's tessera.io/allocated as the cache has it (an empty object when none or malformed).
json CachedAllocated(const PodRef& pod) {
  json value = json::parse(pod ? PodAnnotation(*pod, kAllocatedAnnotation) : "", nullptr, false);
  return value.is_object() ? value : json::object();
}

}  // namespace

Status Allocator::RecordAllocated(const ContainerRef& owner, const std::string& id,
                                  const Grant& grant) {
  std::lock_guard lock(recorded_mu_);
  // Forget what the cache now shows, or what belongs to a pod that is gone.
  for (auto it = recorded_.begin(); it != recorded_.end();) {
    PodRef pod = pods_.FindPod(it->second.ns, it->second.pod);
    bool current = pod && PodUid(*pod) == it->first && CachedAllocated(pod) != it->second.value;
    it = current ? std::next(it) : recorded_.erase(it);
  }
  PodRef pod = pods_.FindPod(owner.ns, owner.pod);
  json value = CachedAllocated(pod);
  if (auto it = recorded_.find(owner.uid); it != recorded_.end()) {
    for (const auto& [container, record] : it->second.value.items()) value[container] = record;
  }
  value[owner.container] = {{"allocation", id}, {"devices", Uuids(grant)}};
  Status written =
      writer_.PatchPodAnnotations(owner.ns, owner.pod, {{kAllocatedAnnotation, value.dump()}});
  if (written.ok()) recorded_[owner.uid] = Recorded{owner.ns, owner.pod, std::move(value)};
  return written;
}

Status Allocator::Fail(const ContainerRef& owner, const std::string& reason) {
  std::string message = "pod " + owner.ns + "/" + owner.pod + " container " + owner.container +
                        ": the decision cannot be honoured: " + reason;
  log::Error("prestart failed", {{"pod", owner.ToString()}, {"reason", reason}});
  Status marked =
      writer_.PatchPodAnnotations(owner.ns, owner.pod, {{kAllocationFailedAnnotation, reason}});
  if (!marked.ok()) {
    log::Warn("could not mark the pod", {{"pod", owner.ToString()}, {"error", marked.message()}});
  }
  return FailedPrecondition(message);
}

}  // namespace tessera::node
