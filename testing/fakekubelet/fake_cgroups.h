// What a container runtime and kubelet would leave for the node agent to find a container's
// processes: the pod's QoS class (status.qosClass), a container ID (status.containerStatuses) and
// the container's cgroup folder, made in a fake cgroup v2 tree with kubelet's cgroupfs layout
// (kubepods/[burstable/|besteffort/]pod<uid>/<container ID>); Admitter::Run then writes the
// started process's PID into its cgroup.procs.
//
// Thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::fakekubelet {

// The pod's QoS class by kubelet's rule: "Guaranteed" when every container has cpu and memory
// limits and its requests (where given) equal them, "BestEffort" when no container asks for cpu
// or memory at all, "Burstable" otherwise.
std::string QosClassOf(const nlohmann::json& pod);

// The ID of container `name` in the pod's status ("<runtime>://<id>"), or a new random
// "containerd://<64 hex digits>".
std::string ContainerIdFor(const nlohmann::json& pod, const std::string& name);

// Makes `cgroup_root` a cgroup v2 tree (cgroup.controllers) and the container's folder in it;
// returns the folder.
Result<std::string> MakeContainerCgroup(const std::string& cgroup_root, const std::string& pod_uid,
                                        const std::string& qos_class,
                                        const std::string& container_id);

}  // namespace tessera::fakekubelet
