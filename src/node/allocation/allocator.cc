#include "node/allocation/allocator.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "log/log.h"

namespace tessera::node {

using nlohmann::json;

Allocator::Allocator(AllocatorOptions options, std::vector<ResourceSpec> resources, PodSource& pods,
                     AllocationRecorder& recorder, DeviceAssignments& kubelet)
    : options_(std::move(options)),
      resources_(std::move(resources)),
      pods_(pods),
      recorder_(recorder),
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

std::string Allocator::AllocationDir(const std::string& id) const {
  return AllocationDirOf(options_.state_dir, id);
}

std::string Allocator::RegionDir(const std::string& id) const {
  return RegionDirOf(options_.state_dir, id);
}

std::string Allocator::CdiSpecPath(const std::string& id) const {
  return options_.cdi_dir + "/" + CdiSpecFileName(kCdiContainerKind, id);
}

const ResourceSpec* Allocator::FindResource(const std::string& name) const {
  for (const ResourceSpec& r : resources_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

namespace {

// The whole GPUs behind device IDs, by index: the grant of a pod that has no decision, and the
// device nodes without CDI (kubelet passes the IDs in random order; the container's device order
// must not change between calls).
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

std::vector<std::string> Uuids(const Grant& g) {
  std::vector<std::string> out;
  for (const GrantDevice& d : g.devices) out.push_back(d.uuid);
  return out;
}

// The pod with UID `uid` among `pods`, or nullptr.
PodRef PodWithUid(const std::vector<PodRef>& pods, const std::string& uid) {
  if (uid.empty()) return nullptr;
  for (const PodRef& p : pods) {
    if (PodUid(*p) == uid) return p;
  }
  return nullptr;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

Status CheckGrant(const Grant& grant, const std::vector<GpuInfo>& gpus) {
  std::set<std::string> seen;
  for (const GrantDevice& d : grant.devices) {
    const GpuInfo* g = FindGpu(gpus, d.uuid);
    if (!seen.insert(d.uuid).second) return InvalidArgument("GPU " + d.uuid + " is listed twice");
    if (g == nullptr) {
      // A MIG device: its GPU instance's memory is what it has.
      const MigDeviceRef mig = FindMigDevice(gpus, d.uuid);
      if (mig.gpu == nullptr) return NotFound("GPU " + d.uuid + " is not on this node");
      if (d.memory_mib > mig.instance->memory_mib) {
        return ResourceExhausted("MIG device " + d.uuid + " (" + mig.instance->profile + ") has " +
                                 std::to_string(mig.instance->memory_mib) +
                                 " MiB, the decision gives " + std::to_string(d.memory_mib) +
                                 " MiB");
      }
      continue;
    }
    if (g->mig.enabled) {
      return FailedPrecondition("GPU " + d.uuid + " is in MIG mode: it is no CUDA device; a " +
                                "decision must name one of its MIG devices (MIG-...)");
    }
    if (d.memory_mib > g->virtual_memory_mib()) {
      return ResourceExhausted("GPU " + d.uuid + " has " + MemoryText(*g) +
                               ", the decision gives " + std::to_string(d.memory_mib) + " MiB");
    }
  }
  return Status::Ok();
}

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
  std::set<std::pair<std::string, std::string>> held;  // (pod UID, container) with this resource
  if (Result<AssignmentList> listed = kubelet_.List(); listed.ok()) {
    for (const DeviceAssignment& a : **listed) {
      if (a.resource == resource) held.insert({a.pod_uid, a.container});
    }
  }
  std::vector<ContainerRef> cands =
      AllocateCandidates(pods, resource, size, [&](const ContainerRef& c) {
        return held.count({c.uid, c.container}) > 0;
      });
  PodRef likeliest = cands.empty() ? nullptr : PodWithUid(pods, cands.front().uid);
  // Only a decision that verifies orders the IDs (Prepare refuses the others, and counts them).
  if (likeliest && (PodAnnotation(*likeliest, kAllocationAnnotation).empty() ||
                    options_.signing.Check(*likeliest, kAllocationAnnotation, "").ok())) {
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
  if (FindResource(resource) == nullptr) {
    return InvalidArgument("resource " + resource + " is not served here");
  }
  AllocateAnswer answer;
  std::string id = NewAllocationId();
  while (::access(AllocationDir(id).c_str(), F_OK) == 0) id = NewAllocationId();
  answer.allocation_id = id;
  std::vector<GpuInfo> gpus = Gpus();
  // Placeholder files (no GPU) until PreStartContainer knows the container.
  json placeholder = {{"resource", resource}, {"devices", device_ids}};
  {
    std::lock_guard lock(write_mu_);
    RETURN_IF_ERROR(WriteFiles(id, Grant{}, placeholder, gpus));
  }
  answer.mounts = {
      {kContainerAllocationDir, AllocationDir(id), true},
      {kContainerLibraryPath, options_.library_path, true},
      {"/etc/ld.so.preload", options_.state_dir + "/ld.so.preload", true},
      {kContainerRegionDir, RegionDir(id), false},
  };
  if (options_.cdi) {
    answer.cdi_device = CdiDeviceName(id);
  } else {
    // Without CDI the device nodes are fixed now: those of the GPUs behind the device IDs.
    ASSIGN_OR_RETURN(Grant behind, WholeGpus(device_ids, gpus));
    std::vector<std::string> uuids = Uuids(behind);
    ASSIGN_OR_RETURN(answer.devices, DeviceNodesOf(uuids, gpus, options_.driver_root));
    answer.envs["NVIDIA_VISIBLE_DEVICES"] = uuids.empty() ? "void" : Join(uuids);
  }
  log::Debug(
      "allocate",
      {{"resource", resource}, {"allocation", id}, {"devices", std::to_string(device_ids.size())}});
  return answer;
}

Status Allocator::PreStart(const std::string& resource,
                           const std::vector<std::string>& device_ids) {
  if (FindResource(resource) == nullptr) {
    return InvalidArgument("resource " + resource + " is not served here");
  }
  std::vector<std::string> wanted = device_ids;
  std::sort(wanted.begin(), wanted.end());
  auto refuse = [&](const std::string& why) {
    std::string message =
        "cannot tell which container holds " + resource + " devices " + Join(wanted) + ": " + why;
    log::Error("prestart refused", {{"resource", resource}, {"reason", message}});
    return FailedPrecondition(message);
  };
  Result<AssignmentList> listed = kubelet_.List();
  if (!listed.ok()) return refuse(listed.status().message());

  // The containers holding exactly these devices (several when kubelet handed an init
  // container's devices on), and every allocation of this agent's each of them holds.
  std::vector<std::pair<std::string, std::string>> owners;  // (pod UID, container)
  for (const DeviceAssignment& a : **listed) {
    if (a.resource != resource || a.device_ids != wanted || a.allocation_id.empty()) continue;
    std::pair<std::string, std::string> key{a.pod_uid, a.container};
    if (std::find(owners.begin(), owners.end(), key) == owners.end()) owners.push_back(key);
  }
  if (owners.empty()) {
    return refuse(
        "kubelet's device checkpoint has no container holding them with an answer of "
        "this node agent's");
  }
  std::vector<PodRef> pods = pods_.NodePods();
  std::vector<GpuInfo> gpus = Gpus();
  for (const auto& [uid, container] : owners) {
    PodRef pod = PodWithUid(pods, uid);
    if (!pod) {
      return Unavailable("the pod with UID " + uid + " (container " + container +
                         ") is not in the node agent's pod cache yet; kubelet will retry");
    }
    const json& meta = (*pod)["metadata"];
    ContainerRef owner{meta.value("namespace", ""), meta.value("name", ""), uid, container};
    std::vector<DeviceAssignment> held;
    for (const DeviceAssignment& a : **listed) {
      if (a.pod_uid == uid && a.container == container && !a.allocation_id.empty() &&
          FindResource(a.resource) != nullptr) {
        held.push_back(a);
      }
    }
    RETURN_IF_ERROR(Prepare(*pod, owner, held, gpus));
  }
  return Status::Ok();
}

Status Allocator::Prepare(const json& pod, const ContainerRef& owner,
                          const std::vector<DeviceAssignment>& held,
                          const std::vector<GpuInfo>& gpus) {
  std::vector<std::string> all_ids;
  for (const DeviceAssignment& a : held) {
    all_ids.insert(all_ids.end(), a.device_ids.begin(), a.device_ids.end());
  }
  if (!PodAnnotation(pod, kAllocationAnnotation).empty()) {
    const std::string what = "pod " + owner.ns + "/" + owner.pod;
    if (Status s = options_.signing.Check(pod, kAllocationAnnotation, what); !s.ok()) {
      options_.signing.Refused(kAllocationAnnotation, s.message(),
                               "container " + owner.container + " not started");
      return FailedPrecondition(s.message() + "; container " + owner.container + " is not started");
    }
  }
  Result<Grant> grant = GrantFor(pod, owner, all_ids, gpus);
  if (!grant.ok()) return Fail(owner, grant.status().message());
  std::vector<std::string> uuids = Uuids(*grant);
  if (!options_.cdi) {
    // The device nodes were fixed at Allocate from the device IDs kubelet chose.
    for (const DeviceAssignment& a : held) {
      Result<Grant> behind = WholeGpus(a.device_ids, gpus);
      if (!behind.ok()) return Fail(owner, behind.status().message());
      std::vector<std::string> fixed = Uuids(*behind);
      if (std::set<std::string>(fixed.begin(), fixed.end()) !=
          std::set<std::string>(uuids.begin(), uuids.end())) {
        return Fail(owner, "the GPUs of " + a.resource + " devices " + Join(a.device_ids) +
                               " are \"" + Join(fixed) + "\" but the decision is \"" + Join(uuids) +
                               "\"; without CDI the device nodes are fixed at Allocate (enable "
                               "CDI: node.cdi=true, kubelet 1.29 or later)");
      }
    }
  }
  json who = {{"namespace", owner.ns},
              {"pod", owner.pod},
              {"uid", owner.uid},
              {"container", owner.container}};
  // The first allocation by resource name is the one recorded on the pod.
  const DeviceAssignment* recorded = nullptr;
  {
    std::lock_guard lock(write_mu_);
    for (const DeviceAssignment& a : held) {
      RETURN_IF_ERROR(WriteFiles(a.allocation_id, *grant, who, gpus));
      if (recorded == nullptr || a.resource < recorded->resource) recorded = &a;
    }
  }
  recorder_.Allocated(owner, recorded->allocation_id, uuids);
  log::Debug(
      "prestart",
      {{"pod", owner.ToString()}, {"allocation", recorded->allocation_id}, {"gpus", Join(uuids)}});
  return Status::Ok();
}

Status Allocator::WriteFiles(const std::string& id, const Grant& grant, const json& owner,
                             const std::vector<GpuInfo>& gpus) {
  std::string dir = AllocationDir(id);
  RETURN_IF_ERROR(MakeDir(dir));
  RETURN_IF_ERROR(MakeDir(RegionDir(id)));
  RETURN_IF_ERROR(UpdateFileAtomic(dir + "/owner.json", owner.dump() + "\n"));
  RETURN_IF_ERROR(UpdateFileAtomic(dir + "/limits", LimitsText(grant, gpus)));
  if (!options_.cdi) return Status::Ok();
  ASSIGN_OR_RETURN(std::string spec, CdiSpecText(id, grant, gpus, options_.driver_root));
  return UpdateFileAtomic(CdiSpecPath(id), spec);
}

Result<bool> Allocator::RewriteLimits(const std::string& id, const std::string& content) {
  const std::string path = AllocationDir(id) + "/limits";
  std::lock_guard lock(write_mu_);
  std::ifstream in(path);
  std::string current((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.good() || in.eof()) {
    if (current == content) return false;
  }
  RETURN_IF_ERROR(WriteFileAtomic(path, content));
  return true;
}

Status Allocator::Fail(const ContainerRef& owner, const std::string& reason) {
  std::string message = "pod " + owner.ns + "/" + owner.pod + " container " + owner.container +
                        ": the decision cannot be honoured: " + reason;
  log::Error("prestart failed", {{"pod", owner.ToString()}, {"reason", reason}});
  recorder_.Failed(owner, reason);
  return FailedPrecondition(message);
}

}  // namespace tessera::node
