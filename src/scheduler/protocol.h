// The annotations that carry Tessera's protocol between its parts (docs/annotations.md):
//
//   node tessera.io/gpus              inventory, written by the node agent
//   pod  tessera.io/allocation        the scheduler's decision, written in the Binding
//   pod  tessera.io/allocation-failed the node agent's verdict that the decision cannot be used;
//                                     any non-empty value frees the pod's GPUs in the scheduler
//
// Parsers accept unknown fields (others may be added) and reject missing or ill-typed fixed
// fields with a message naming the field. Plain values and pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "annotations/names.h"
#include "common/status.h"
#include "scheduler/request.h"

namespace tessera::scheduler {

inline constexpr const char* kInventoryAnnotation = annotations::kGpus;
inline constexpr const char* kAllocationAnnotation = annotations::kAllocation;
inline constexpr const char* kAllocationFailedAnnotation = annotations::kAllocationFailed;

struct GpuInfo {
  std::string uuid;
  int index = 0;
  std::string model;
  uint64_t memory_mib = 0;
  int sms = 0;
  int numa = -1;  // -1 = unknown
  bool healthy = true;
  // vGPU slots (node.device-split-count): how many containers of the slot-counted resource
  // (nvidia.com/gpu) kubelet admits on this GPU; 0 = not counted (an agent that does not say).
  int slots = 0;
  bool operator==(const GpuInfo&) const = default;
};

// `{"version":1,"serving":..,"gpus":[{"uuid":..,"index":..,"model":..,"memoryMiB":..,"sms":..,
// "numa":..,"healthy":..,"slots":..}]}`. UUIDs must be unique and non-empty. `serving` (optional,
// true when absent, as older agents write it): every device plugin of the node is registered
// with kubelet; while it is false kubelet would fail a pod that needs the node's devices.
Result<std::vector<GpuInfo>> ParseInventory(std::string_view text, bool* serving = nullptr);
std::string InventoryToJson(const std::vector<GpuInfo>& gpus, bool serving = true);

struct DeviceAllocation {
  std::string uuid;
  uint64_t memory_mib = 0;
  int cores = 0;           // 0 = no compute limit
  int cores_limit = 0;     // elastic burst cap, 0 = none (field "coresLimit", omitted when 0)
  bool exclusive = false;  // field "exclusive", omitted when false
  bool operator==(const DeviceAllocation&) const = default;
};

struct ContainerAllocation {
  std::string name;
  bool init = false;  // field "init", omitted when false
  ComputeMode mode = ComputeMode::kHard;
  std::vector<DeviceAllocation> devices;
  bool slot = false;  // takes a vGPU slot on each of its GPUs (field "slot", omitted when false)
  bool operator==(const ContainerAllocation&) const = default;
};

struct Allocation {
  std::string node;
  std::vector<ContainerAllocation> containers;
  bool operator==(const Allocation&) const = default;
};

std::string AllocationToJson(const Allocation& allocation);
Result<Allocation> ParseAllocation(std::string_view text);

// What a pod holds on one GPU: the peak of its init containers (which run one at a time) against
// the sum of its app containers (which run together), per quantity, as Kubernetes counts
// resources. Exclusive when any container uses the GPU exclusively.
struct GpuCharge {
  std::string uuid;
  uint64_t memory_mib = 0;
  int cores = 0;
  bool exclusive = false;
  int slots = 0;
  bool operator==(const GpuCharge&) const = default;
};

// One entry per GPU the allocation names, in order of first appearance.
std::vector<GpuCharge> ChargesOf(const Allocation& allocation);

}  // namespace tessera::scheduler
