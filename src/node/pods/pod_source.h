// The node agent's view of the API server: the pods bound to this node (from a watch cache) and
// the writes it makes (pod and node annotations). Behind an interface so that the agent runs
// against the Kubernetes client in production and an in-memory store in tests and benchmarks.
//
// Implementations are thread-safe: the device plugins call them from gRPC threads.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::node {

// Annotation changes for a merge patch: a value sets the key, nullopt removes it.
using AnnotationPatch = std::map<std::string, std::optional<std::string>>;

// A pod as the cache holds it. Never changed once published: a newer version of the pod is a new
// object, so a reader may keep it as long as it likes without a lock and without a copy.
using PodRef = std::shared_ptr<const nlohmann::json>;

class PodSource {
 public:
  virtual ~PodSource() = default;
  // Every pod whose spec.nodeName is this node, from the cache (no round trip, no copy).
  virtual std::vector<PodRef> NodePods() const = 0;
  // One pod of this node by namespace and name, or nullptr.
  virtual PodRef FindPod(const std::string& ns, const std::string& name) const = 0;
  // A copy of FindPod's pod, or nullopt.
  std::optional<nlohmann::json> Pod(const std::string& ns, const std::string& name) const {
    PodRef pod = FindPod(ns, name);
    if (!pod) return std::nullopt;
    return *pod;
  }
};

class ApiWriter {
 public:
  virtual ~ApiWriter() = default;
  virtual Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                                     const AnnotationPatch& patch) = 0;
  // One merge patch of the node's annotations and labels (a nullopt value removes one).
  virtual Status PatchNode(const std::string& node, const AnnotationPatch& annotations,
                           const AnnotationPatch& labels) = 0;
  // Records an Event about pod `ns`/`name`; `type` is "Normal" or "Warning".
  virtual Status CreatePodEvent(const std::string& ns, const std::string& name,
                                const std::string& type, const std::string& reason,
                                const std::string& message) = 0;
};

}  // namespace tessera::node
