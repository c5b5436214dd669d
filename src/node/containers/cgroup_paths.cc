#include "node/containers/cgroup_paths.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace tessera::node {

namespace fs = std::filesystem;

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The pod's folder in each driver's layout for one QoS class.
void AddCandidates(const std::string& uid, QosClass qos, std::vector<std::string>& out) {
  std::string systemd_uid = uid;
  std::replace(systemd_uid.begin(), systemd_uid.end(), '-', '_');
  switch (qos) {
    case QosClass::kGuaranteed:
      out.push_back("kubepods/pod" + uid);
      out.push_back("kubepods.slice/kubepods-pod" + systemd_uid + ".slice");
      break;
    case QosClass::kBurstable:
    case QosClass::kBestEffort: {
      std::string name = qos == QosClass::kBurstable ? "burstable" : "besteffort";
      out.push_back("kubepods/" + name + "/pod" + uid);
      out.push_back("kubepods.slice/kubepods-" + name + ".slice/kubepods-" + name + "-pod" +
                    systemd_uid + ".slice");
      break;
    }
  }
}

// Whether the cgroup folder `name` is the container `id`'s: "<id>", or "<prefix>-<id>" with an
// optional ".scope", except the runtime's monitor ("crio-conmon-<id>").
bool IsContainerFolder(std::string name, const std::string& id) {
  if (EndsWith(name, ".scope")) name.resize(name.size() - 6);
  if (name == id) return true;
  return EndsWith(name, "-" + id) && name.find("conmon") == std::string::npos;
}

}  // namespace

std::optional<ContainerId> ParseContainerId(const std::string& text) {
  size_t sep = text.find("://");
  if (sep == std::string::npos || sep == 0 || sep + 3 == text.size()) return std::nullopt;
  ContainerId out{text.substr(0, sep), text.substr(sep + 3)};
  if (out.id.find('/') != std::string::npos) return std::nullopt;
  return out;
}

std::optional<QosClass> ParseQosClass(const std::string& text) {
  if (text == "Guaranteed") return QosClass::kGuaranteed;
  if (text == "Burstable") return QosClass::kBurstable;
  if (text == "BestEffort") return QosClass::kBestEffort;
  return std::nullopt;
}

std::vector<std::string> CgroupHierarchies(const std::string& cgroup_root) {
  std::error_code ec;
  if (fs::exists(cgroup_root + "/cgroup.controllers", ec)) return {cgroup_root};
  std::vector<std::string> out;
  for (const char* controller : {"pids", "memory", "cpu,cpuacct", "cpu", "systemd"}) {
    std::string path = cgroup_root + "/" + controller;
    if (fs::is_directory(path, ec)) out.push_back(path);
  }
  return out;
}

std::vector<std::string> PodCgroupCandidates(const std::string& pod_uid,
                                             std::optional<QosClass> qos) {
  bool valid = !pod_uid.empty() && std::all_of(pod_uid.begin(), pod_uid.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  });
  if (!valid) return {};
  std::vector<std::string> out;
  if (qos) AddCandidates(pod_uid, *qos, out);
  for (QosClass q : {QosClass::kGuaranteed, QosClass::kBurstable, QosClass::kBestEffort}) {
    if (q != qos) AddCandidates(pod_uid, q, out);
  }
  return out;
}

std::optional<std::string> FindContainerCgroup(const std::string& cgroup_root,
                                               const std::string& pod_uid,
                                               std::optional<QosClass> qos,
                                               const std::string& container_id,
                                               const std::string& kubelet_root) {
  if (container_id.empty()) return std::nullopt;
  std::vector<std::string> pods = PodCgroupCandidates(pod_uid, qos);
  std::string under = kubelet_root;
  while (!under.empty() && under.back() == '/') under.pop_back();
  if (!under.empty() && under.front() != '/') under = "/" + under;
  for (const std::string& hierarchy : CgroupHierarchies(cgroup_root)) {
    for (const std::string& pod : pods) {
      std::error_code ec;
      fs::directory_iterator it(hierarchy + under + "/" + pod, ec);
      if (ec) continue;
      for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (it->is_directory(ec) &&
            IsContainerFolder(it->path().filename().string(), container_id)) {
          return it->path().string();
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace tessera::node
