// Finding a Kubernetes container's cgroup folder on the node, from what the pod object says: the
// pod's UID, its QoS class and the container's ID (status.containerStatuses[].containerID).
// It knows kubelet's cgroupfs and systemd layouts under cgroup v1 and v2, and finds the container
// by its ID among the pod folder's children, so the runtime's prefix need not be known; CRI-O's
// "crio-conmon-<id>" (the monitor, not the container) is not taken.
// Pure functions over the file system; thread-safe.
//
//   std::optional<std::string> dir = FindContainerCgroup(cgroup_root, pod_uid,
//       ParseQosClass(qos_class), ParseContainerId(container_id)->id, kubelet_cgroup_root);
//
// The layouts and runtimes' names: docs/node-agent.md, "The pids file".
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tessera::node {

// A container ID as the pod status gives it: "<runtime>://<id>".
struct ContainerId {
  std::string runtime;  // "containerd", "cri-o", "docker", ...
  std::string id;
};
// nullopt when `text` is not "<runtime>://<id>" with a non-empty ID.
std::optional<ContainerId> ParseContainerId(const std::string& text);

enum class QosClass { kGuaranteed, kBurstable, kBestEffort };
// The pod's status.qosClass ("Guaranteed", "Burstable", "BestEffort"); nullopt for anything else.
std::optional<QosClass> ParseQosClass(const std::string& text);

// The hierarchy roots under `cgroup_root` where pods may be found, in the order searched.
std::vector<std::string> CgroupHierarchies(const std::string& cgroup_root);

// The pod's folder relative to a hierarchy root: cgroupfs layout, then systemd layout, for
// `qos` first and then the other classes (the class may be unknown or wrong); empty when
// `pod_uid` holds anything but letters, digits and '-'.
std::vector<std::string> PodCgroupCandidates(const std::string& pod_uid,
                                             std::optional<QosClass> qos);

// The container's cgroup folder (absolute path), or nullopt when none is found. `kubelet_root`
// is kubelet's cgroupRoot (--cgroup-root), under which it keeps kubepods: "/" by default.
std::optional<std::string> FindContainerCgroup(const std::string& cgroup_root,
                                               const std::string& pod_uid,
                                               std::optional<QosClass> qos,
                                               const std::string& container_id,
                                               const std::string& kubelet_root = "/");

}  // namespace tessera::node
