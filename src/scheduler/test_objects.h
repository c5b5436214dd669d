// Builders of API objects (pods, nodes) as JSON for the scheduler's tests. Test-only.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/protocol.h"

namespace tessera::scheduler::testing {

using Resources = std::map<std::string, nlohmann::json>;

struct TestContainer {
  std::string name;
  Resources limits;
  bool init = false;
};

// A pending pod in namespace "default" with uid "uid-<name>".
inline nlohmann::json MakePod(const std::string& name, const std::vector<TestContainer>& containers,
                              const std::map<std::string, std::string>& annotations = {}) {
  nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}},
      {"spec", {{"containers", nlohmann::json::array()}}},
      {"status", {{"phase", "Pending"}}}};
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  for (const TestContainer& c : containers) {
    nlohmann::json container = {{"name", c.name}, {"image", "busybox"}};
    if (!c.limits.empty()) container["resources"]["limits"] = c.limits;
    pod["spec"][c.init ? "initContainers" : "containers"].push_back(container);
  }
  return pod;
}

// One container "main" with these limits.
inline nlohmann::json MakePod(const std::string& name, const Resources& limits,
                              const std::map<std::string, std::string>& annotations = {}) {
  return MakePod(name, std::vector<TestContainer>{{"main", limits}}, annotations);
}

inline GpuInfo Gpu(const std::string& uuid, int index, const std::string& model,
                   uint64_t memory_mib, int numa = 0) {
  return GpuInfo{uuid, index, model, memory_mib, 82, numa, true};
}

inline nlohmann::json MakeNode(const std::string& name, const std::vector<GpuInfo>& gpus) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name}, {"annotations", {{kInventoryAnnotation, InventoryToJson({true, gpus})}}}}}};
}

// `count` GPUs of one model named "<node>-gpu<i>".
inline nlohmann::json MakeUniformNode(const std::string& name, int count, const std::string& model,
                                      uint64_t memory_mib) {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    gpus.push_back(Gpu(name + "-gpu" + std::to_string(i), i, model, memory_mib,
                       i < count / 2 || count == 1 ? 0 : 1));
  }
  return MakeNode(name, gpus);
}

// `pod` bound to `node` with `allocation` as its decision annotation, Running.
inline nlohmann::json BoundPod(nlohmann::json pod, const std::string& node,
                               const Allocation& allocation) {
  pod["spec"]["nodeName"] = node;
  pod["metadata"]["annotations"][kAllocationAnnotation] = AllocationToJson(allocation);
  pod["status"]["phase"] = "Running";
  return pod;
}

// An AdmissionReview of `pod` as the API server sends it to a webhook; `old_pod` (UPDATE) and
// `user` (userInfo) only when given.
inline nlohmann::json MakeReview(const nlohmann::json& pod, const std::string& operation = "CREATE",
                                 const nlohmann::json& old_pod = nullptr,
                                 const std::string& user = "") {
  nlohmann::json request = {{"uid", "review-1"},
                            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                            {"operation", operation},
                            {"namespace", "default"},
                            {"object", pod}};
  if (!old_pod.is_null()) request["oldObject"] = old_pod;
  if (!user.empty()) request["userInfo"] = {{"username", user}};
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}};
}

}  // namespace tessera::scheduler::testing
