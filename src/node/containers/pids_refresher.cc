#include "node/containers/pids_refresher.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "abi/host_pids.h"
#include "common/json_text.h"
#include "log/log.h"
#include "node/allocation/allocation_files.h"
#include "node/allocation/pod_view.h"
#include "node/containers/cgroup_paths.h"
#include "node/containers/container_pids.h"

namespace tessera::node {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The status of container `name` (regular or init), or nullptr.
const json* ContainerStatus(const json& pod, const std::string& name) {
  if (!pod.contains("status")) return nullptr;
  for (const char* list : {"containerStatuses", "initContainerStatuses"}) {
    auto it = pod["status"].find(list);
    if (it == pod["status"].end() || !it->is_array()) continue;
    for (const json& c : *it) {
      if (TextOf(c, "name") == name) return &c;
    }
  }
  return nullptr;
}

// Running, or no state reported (then the pod being unfinished has to do).
bool Running(const json& status) {
  auto state = status.find("state");
  if (state == status.end() || !state->is_object() || state->empty()) return true;
  return state->contains("running");
}

// The names of `pod`'s containers (regular and init) that use ResourceClaim `claim` of the pod's
// namespace: named by the pod's spec.resourceClaims directly or, made from a template, by
// status.resourceClaimStatuses; a container uses an entry it lists in resources.claims.
std::vector<std::string> ClaimContainers(const json& pod, const std::string& claim) {
  std::set<std::string> entries;
  const json& spec = pod.contains("spec") ? pod["spec"] : json::object();
  if (auto it = spec.find("resourceClaims"); it != spec.end() && it->is_array()) {
    for (const json& c : *it) {
      if (TextOf(c, "resourceClaimName") == claim) entries.insert(TextOf(c, "name"));
    }
  }
  if (pod.contains("status")) {
    auto it = pod["status"].find("resourceClaimStatuses");
    if (it != pod["status"].end() && it->is_array()) {
      for (const json& c : *it) {
        if (TextOf(c, "resourceClaimName") == claim) entries.insert(TextOf(c, "name"));
      }
    }
  }
  std::vector<std::string> names;
  if (entries.empty()) return names;
  for (const char* list : {"initContainers", "containers"}) {
    auto it = spec.find(list);
    if (it == spec.end() || !it->is_array()) continue;
    for (const json& container : *it) {
      const json* claims = nullptr;
      if (auto r = container.find("resources"); r != container.end() && r->is_object()) {
        if (auto c = r->find("claims"); c != r->end() && c->is_array()) claims = &*c;
      }
      if (claims == nullptr) continue;
      for (const json& use : *claims) {
        if (entries.count(TextOf(use, "name")) != 0) {
          names.push_back(TextOf(container, "name"));
          break;
        }
      }
    }
  }
  return names;
}

}  // namespace

PidsRefresher::PidsRefresher(const PodSource& pods, PidsOptions options)
    : pods_(pods), options_(std::move(options)) {}

void PidsRefresher::RunOnce() {
  std::set<std::string> seen;
  // Read once per pass: every claim's folder looks through the node's pods.
  const std::vector<PodRef> node_pods = pods_.NodePods();
  std::error_code ec;
  fs::directory_iterator it(options_.state_dir + "/allocations", ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    std::string id = it->path().filename().string();
    seen.insert(id);
    Refresh(id, it->path().string(), node_pods);
  }
  std::erase_if(logged_missing_, [&](const auto& e) {
    return seen.count(e.first.substr(0, e.first.find('/'))) == 0;
  });
  std::erase_if(logged_ambiguous_, [&](const auto& id) { return seen.count(id) == 0; });
  std::erase_if(cgroups_, [&](const auto& e) { return seen.count(e.first) == 0; });
}

void PidsRefresher::Refresh(const std::string& id, const std::string& dir,
                            const std::vector<PodRef>& node_pods) {
  cgroups_.erase(id);
  std::ifstream in(dir + "/owner.json");
  json owner = json::parse(in, nullptr, false);
  std::vector<ContainerPid> pids;
  if (TextOf(owner, "kind") == "ResourceClaim") {
    if (!ClaimPids(id, owner, node_pods, &pids)) return;
  } else {
    std::string uid = TextOf(owner, "uid");
    if (uid.empty()) return;  // Allocate without PreStartContainer
    std::optional<json> pod = pods_.Pod(TextOf(owner, "namespace"), TextOf(owner, "pod"));
    if (!pod || TextOf((*pod)["metadata"], "uid") != uid || PodTerminal(*pod)) return;
    std::optional<std::string> cgroup;
    if (!ContainerPidsOf(id, *pod, TextOf(owner, "container"), &pids, &cgroup)) return;
    if (cgroup) cgroups_[id] = *cgroup;
  }
  Status s = UpdateFileAtomic(dir + "/" + TESSERA_PIDS_FILE_NAME, PidsText(pids));
  // The folder may have gone with its container between listing and writing.
  if (!s.ok() && fs::exists(dir)) {
    log::Warn("cannot write the pids file", {{"allocation", id}, {"error", s.message()}});
  }
}

bool PidsRefresher::ContainerPidsOf(const std::string& id, const json& pod,
                                    const std::string& container, std::vector<ContainerPid>* pids,
                                    std::optional<std::string>* cgroup_dir) {
  const json* status = ContainerStatus(pod, container);
  std::optional<ContainerId> cid;
  if (status) cid = ParseContainerId(TextOf(*status, "containerID"));
  if (!cid) return false;  // not started yet
  if (!Running(*status)) return true;
  std::string uid = TextOf(pod["metadata"], "uid");
  std::optional<QosClass> qos = ParseQosClass(TextOf(pod["status"], "qosClass"));
  std::optional<std::string> cgroup =
      FindContainerCgroup(options_.cgroup_root, uid, qos, cid->id, options_.kubelet_cgroup_root);
  std::string key = id + "/" + uid + "/" + container;
  if (cgroup) {
    std::vector<ContainerPid> found = ContainerPids(*cgroup, options_.proc_root);
    pids->insert(pids->end(), found.begin(), found.end());
    *cgroup_dir = cgroup;
    logged_missing_.erase(key);
  } else if (logged_missing_[key] != cid->id) {
    logged_missing_[key] = cid->id;
    log::Info(
        "the container's cgroup is not found yet; its processes stay out of the pids file",
        {{"allocation", id},
         {"pod", TextOf(pod["metadata"], "namespace") + "/" + TextOf(pod["metadata"], "name")},
         {"container", container},
         {"containerID", cid->runtime + "://" + cid->id},
         {"cgroupRoot", options_.cgroup_root}});
  }
  return true;
}

bool PidsRefresher::ClaimPids(const std::string& id, const json& owner,
                              const std::vector<PodRef>& node_pods,
                              std::vector<ContainerPid>* pids) {
  const std::string ns = TextOf(owner, "namespace"), claim = TextOf(owner, "claim");
  if (ns.empty() || claim.empty()) return false;
  bool any = false;
  for (const PodRef& pod : node_pods) {
    if (TextOf((*pod)["metadata"], "namespace") != ns || PodTerminal(*pod)) continue;
    for (const std::string& container : ClaimContainers(*pod, claim)) {
      std::optional<std::string> cgroup;
      any |= ContainerPidsOf(id, *pod, container, pids, &cgroup);
    }
  }
  if (!any) return false;
  DropAmbiguous(id, pids);
  return true;
}

void PidsRefresher::DropAmbiguous(const std::string& id, std::vector<ContainerPid>* pids) {
  std::map<pid_t, int> uses;
  for (const ContainerPid& p : *pids) ++uses[p.container];
  std::vector<pid_t> dropped;
  std::erase_if(*pids, [&](const ContainerPid& p) {
    if (uses[p.container] < 2) return false;
    dropped.push_back(p.host);
    return true;
  });
  if (dropped.empty() || logged_ambiguous_.count(id) != 0) return;
  logged_ambiguous_.insert(id);
  log::Info(
      "processes of the claim's containers share PIDs in their own namespaces: they are left out "
      "of its pids file, and their library limits compute by its estimates alone",
      {{"allocation", id}, {"processes", std::to_string(dropped.size())}});
}

}  // namespace tessera::node
