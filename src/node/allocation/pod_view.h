// Reading the parts of a pod API object (nlohmann::json) that the node agent needs: identity,
// phase, per-container device requests, and the candidates for an Allocate call.
//
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/pods/pod_source.h"

namespace tessera::node {

// One container of one pod.
struct ContainerRef {
  std::string ns, pod, uid, container;
  bool operator<(const ContainerRef& o) const {
    return std::tie(uid, container) < std::tie(o.uid, o.container);
  }
  bool operator==(const ContainerRef& o) const { return uid == o.uid && container == o.container; }
  std::string ToString() const { return ns + "/" + pod + " container " + container; }
};

// The whole number of `resource` the container asks for (limits, else requests); 0 when absent
// or not a whole number.
int64_t ContainerRequest(const nlohmann::json& container, const std::string& resource);

// The pod's container object named `name` (init containers included), or nullptr.
const nlohmann::json* FindContainer(const nlohmann::json& pod, const std::string& name);

// Succeeded or Failed: none of its containers runs any more.
bool PodTerminal(const nlohmann::json& pod);

// Terminal or being deleted (its containers may still run through preStop hooks and the grace
// period): no container of it starts any more.
bool PodFinished(const nlohmann::json& pod);

// metadata.uid (a view into `pod`), or "" when absent.
std::string_view PodUid(const nlohmann::json& pod);

// The value of annotation `key`, or "" when absent.
std::string PodAnnotation(const nlohmann::json& pod, const std::string& key);

// The containers that may be behind an Allocate of `count` devices of `resource`, likeliest
// first: containers of unfinished pods that ask for exactly `count`, are not `taken`, and have no
// entry in the pod's `tessera.io/allocated`; pods oldest first (then by namespace/name), init
// containers before the others. Only the pods that have a candidate are ordered, and the
// annotation is parsed only for a pod with a container that is otherwise a candidate.
std::vector<ContainerRef> AllocateCandidates(const std::vector<PodRef>& pods,
                                             const std::string& resource, int64_t count,
                                             const std::function<bool(const ContainerRef&)>& taken);

}  // namespace tessera::node
