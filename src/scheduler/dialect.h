// The three request dialects (vGPU/HAMi, vcuda/TKEStack, gpushare/Aliyun) and the parser that turns
// a pod into the one request model (request.h).
//
// Each dialect can be switched off and each of its resource names renamed (DialectConfig, filled
// from the `scheduler.dialects.*` keys). A disabled dialect's resources are ignored as if they were
// any other extended resource. Parsing validates: every error message names the container, the
// resource, the value and what is allowed. Pure functions over const inputs: thread-safe.
//
//   ASSIGN_OR_RETURN(PodRequest req, ParsePod(pod_json, dialects));
//   if (req.empty()) { /* the pod asks for no Tessera resource */ }
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "config/config.h"
#include "scheduler/dialect_config.h"
#include "scheduler/protocol.h"
#include "scheduler/request.h"

namespace tessera::scheduler {

// Pod annotations of the selection constraints (fixed names, not dialect-specific).
inline constexpr char kUseGpuType[] = "nvidia.com/use-gputype";
inline constexpr char kNoUseGpuType[] = "nvidia.com/nouse-gputype";
inline constexpr char kUseGpuUuid[] = "nvidia.com/use-gpuuuid";
inline constexpr char kNoUseGpuUuid[] = "nvidia.com/nouse-gpuuuid";
inline constexpr char kGpuModelAnnotation[] = "tessera.io/gpu-model";
inline constexpr char kGpuUuidAnnotation[] = "tessera.io/gpu-uuid";
inline constexpr char kPolicyAnnotation[] = "tessera.io/policy";
inline constexpr char kHamiNodePolicyAnnotation[] = "hami.io/node-scheduler-policy";
inline constexpr char kHamiGpuPolicyAnnotation[] = "hami.io/gpu-scheduler-policy";
// HAMi's task priority (0 high, 1 low), a resource of the vGPU dialect that Tessera refuses.
inline constexpr char kHamiPriorityResource[] = "nvidia.com/priority";

// The request of `pod` (a v1 Pod as JSON). An empty request means the pod asks for no Tessera
// resource. InvalidArgument for an invalid request, with a message a user can act on.
Result<PodRequest> ParsePod(const nlohmann::json& pod, const DialectConfig& dialects);

// Marks the containers of `allocation` that take a vGPU slot on each of their GPUs: those whose
// limits name the vGPU count resource, as kubelet counts it. For decisions written without the
// "slot" field (by a scheduler from before slots were counted); it never clears one.
void MarkSlotContainers(const nlohmann::json& pod, const DialectConfig& dialects,
                        Allocation& allocation);

}  // namespace tessera::scheduler
