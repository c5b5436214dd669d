// The extended resources the node agent advertises, one device plugin each, and their device IDs.
//
// kubelet only counts devices; the scheduler does the real accounting. Each dialect therefore
// advertises coarse, countable units with short IDs "<gpu index>-<unit>" ("3-41" is unit 41 of
// GPU 3), so that every ListAndWatch message stays far below kubelet's 4 MiB gRPC limit:
//   kVgpuSlots     nvidia.com/gpu            split-count slots per GPU
//   kVcudaCore     tencent.com/vcuda-core    100 per GPU (1 % of a GPU each)
//   kVcudaMemory   tencent.com/vcuda-memory  one per 256 MiB of virtual memory
//   kGpuMemGiB     aliyun.com/gpu-mem        one per GiB of virtual memory
// (virtual memory: the GPU's memory x node.device-memory-scaling, GpuInfo::virtual_memory_mib).
// Plain values and pure functions; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "node/gpu/gpu.h"

namespace tessera::node {

enum class ResourceKind { kVgpuSlots, kVcudaCore, kVcudaMemory, kGpuMemGiB };

struct ResourceSpec {
  std::string name;  // "nvidia.com/gpu"
  ResourceKind kind = ResourceKind::kVgpuSlots;
};

struct DeviceUnit {
  std::string id;
  int gpu_index = 0;
};

// Units of `spec` on each GPU, given the vGPU split count.
int UnitsPerGpu(const ResourceSpec& spec, const GpuInfo& gpu, int split_count);

// Every device of `spec` on `gpus`, GPU by GPU.
std::vector<DeviceUnit> DeviceUnits(const ResourceSpec& spec, const std::vector<GpuInfo>& gpus,
                                    int split_count);

// The GPU index encoded in a device ID, or nullopt when `id` is not of the form "<index>-<unit>".
std::optional<int> GpuIndexOfDevice(const std::string& id);

// The socket file name of the resource's plugin: "tessera-nvidia.com-gpu.sock".
std::string SocketName(const std::string& resource);

}  // namespace tessera::node
