#include "node/containers/pids_refresher.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "abi/host_pids.h"
#include "log/log.h"
#include "node/allocation/allocation_files.h"
#include "node/allocation/pod_view.h"
#include "node/containers/cgroup_paths.h"
#include "node/containers/container_pids.h"

namespace tessera::node {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The string `key` of `object`, "" when absent or not a string (the pod comes from outside: an
// odd field must not end the agent).
std::string Text(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The status of container `name` (regular or init), or nullptr.
const json* ContainerStatus(const json& pod, const std::string& name) {
  if (!pod.contains("status")) return nullptr;
  for (const char* list : {"containerStatuses", "initContainerStatuses"}) {
    auto it = pod["status"].find(list);
    if (it == pod["status"].end() || !it->is_array()) continue;
    for (const json& c : *it) {
      if (Text(c, "name") == name) return &c;
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

}  // namespace

PidsRefresher::PidsRefresher(const PodSource& pods, PidsOptions options)
    : pods_(pods), options_(std::move(options)) {}

void PidsRefresher::RunOnce() {
  std::set<std::string> seen;
  std::error_code ec;
  fs::directory_iterator it(options_.state_dir + "/allocations", ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    std::string id = it->path().filename().string();
    seen.insert(id);
    Refresh(id, it->path().string());
  }
  std::erase_if(logged_missing_, [&](const auto& e) { return seen.count(e.first) == 0; });
  std::erase_if(cgroups_, [&](const auto& e) { return seen.count(e.first) == 0; });
}

void PidsRefresher::Refresh(const std::string& id, const std::string& dir) {
  cgroups_.erase(id);
  std::ifstream in(dir + "/owner.json");
  json owner = json::parse(in, nullptr, false);
  std::string uid = Text(owner, "uid"), container = Text(owner, "container");
  std::string pod_name = Text(owner, "namespace") + "/" + Text(owner, "pod");
  if (uid.empty()) return;  // Allocate without PreStartContainer
  std::optional<json> pod = pods_.Pod(Text(owner, "namespace"), Text(owner, "pod"));
  if (!pod || Text((*pod)["metadata"], "uid") != uid || PodTerminal(*pod)) return;
  const json* status = ContainerStatus(*pod, container);
  std::optional<ContainerId> cid;
  if (status) cid = ParseContainerId(Text(*status, "containerID"));
  if (!cid) return;  // not started yet

  std::vector<ContainerPid> pids;
  if (Running(*status)) {
    std::optional<QosClass> qos = ParseQosClass(Text((*pod)["status"], "qosClass"));
    std::optional<std::string> cgroup =
        FindContainerCgroup(options_.cgroup_root, uid, qos, cid->id, options_.kubelet_cgroup_root);
    if (cgroup) {
      pids = ContainerPids(*cgroup, options_.proc_root);
      cgroups_[id] = *cgroup;
      logged_missing_.erase(id);
    } else if (logged_missing_[id] != cid->id) {
      logged_missing_[id] = cid->id;
      log::Info("the container's cgroup is not found yet; its pids file stays empty",
                {{"allocation", id},
                 {"pod", pod_name},
                 {"container", container},
                 {"containerID", cid->runtime + "://" + cid->id},
                 {"cgroupRoot", options_.cgroup_root}});
    }
  }
  Status s = UpdateFileAtomic(dir + "/" + TESSERA_PIDS_FILE_NAME, PidsText(pids));
  // The folder may have gone with its container between listing and writing.
  if (!s.ok() && fs::exists(dir)) {
    log::Warn("cannot write the pids file", {{"allocation", id}, {"error", s.message()}});
  }
}

}  // namespace tessera::node
