#include "scheduler/resize.h"

#include <algorithm>

namespace tessera::scheduler {
namespace {

std::string GpuName(const GpuSlot& gpu) {
  return "GPU " + std::to_string(gpu.info.index) + ", " + gpu.info.model;
}

// ", virtual memory 48536 MiB = 24268 MiB x 2" for a GPU whose memory is scaled, as the filter
// says it; else "".
std::string VirtualMemoryNote(const GpuSlot& gpu) {
  if (gpu.info.memory_scaling == 1) return "";
  return ", virtual memory " + std::to_string(gpu.info.virtual_memory_mib()) +
         " MiB = " + std::to_string(gpu.info.memory_mib) + " MiB x " +
         annotations::MemoryScalingText(gpu.info.memory_scaling);
}

const GpuCharge* ChargeOn(const std::vector<GpuCharge>& charges, const std::string& uuid) {
  for (const GpuCharge& c : charges) {
    if (c.uuid == uuid) return &c;
  }
  return nullptr;
}

}  // namespace

std::string SizeText(uint64_t memory_mib, int cores) {
  return std::to_string(memory_mib) + " MiB and " +
         (cores == 0 ? std::string("no compute limit") : std::to_string(cores) + "% cores") +
         " per GPU";
}

Result<Allocation> ResizeDecision(const Allocation& current, const ResizeRequest& request,
                                  std::span<const GpuSlot> gpus) {
  Allocation resized = current;
  ContainerAllocation* container = nullptr;
  std::string names;
  for (ContainerAllocation& c : resized.containers) {
    if (c.name == request.container) container = &c;
    names += (names.empty() ? "" : ", ") + c.name;
  }
  const std::string prefix = "container \"" + request.container + "\": ";
  if (!container) {
    return FailedPrecondition(
        prefix + "holds no GPU in the pod's decision (containers with GPUs: " + names + ")");
  }
  if (container->init) {
    return FailedPrecondition(prefix +
                              "is an init container: only app containers (and sidecars) are "
                              "resized, while they run");
  }
  for (DeviceAllocation& d : container->devices) {
    if (request.memory_mib) d.memory_mib = *request.memory_mib;
    if (request.cores) {
      d.cores = *request.cores;
      if (container->mode == ComputeMode::kElastic && d.cores_limit > 0) {
        d.cores_limit = std::max(d.cores_limit, d.cores);
      }
    }
  }
  container->resized = true;

  const std::vector<GpuCharge> before = ChargesOf(current);
  const std::vector<GpuCharge> after = ChargesOf(resized);
  const DeviceAllocation& wanted = container->devices.front();
  for (const DeviceAllocation& d : container->devices) {
    auto gpu = std::find_if(gpus.begin(), gpus.end(),
                            [&](const GpuSlot& g) { return g.info.uuid == d.uuid; });
    const GpuCharge* was = ChargeOn(before, d.uuid);
    const GpuCharge* now = ChargeOn(after, d.uuid);
    const uint64_t held_mib = was ? was->memory_mib : 0;
    const int held_cores = was ? was->cores : 0;
    if (gpu == gpus.end()) {
      // A shrink is always granted (docs/resize.md), even on a GPU gone from the inventory.
      if (now->memory_mib <= held_mib && now->cores <= held_cores) continue;
      return FailedPrecondition(prefix + "its GPU " + d.uuid +
                                " is not in the node's inventory now; it cannot grow there");
    }
    const uint64_t others_mib = gpu->used_mib - std::min(gpu->used_mib, held_mib);
    const int others_cores = gpu->used_cores - std::min(gpu->used_cores, held_cores);
    const uint64_t total = gpu->info.virtual_memory_mib();
    // What the container may have there: the GPU less what the others hold and what the pod's
    // other containers keep of the pod's charge.
    const uint64_t kept_mib = now->memory_mib - std::min(now->memory_mib, d.memory_mib);
    const int kept_cores = now->cores - std::min(now->cores, d.cores);
    // Compared without a sum that could wrap around.
    if (now->memory_mib > held_mib &&
        (now->memory_mib > total || others_mib > total - now->memory_mib)) {
      const uint64_t room = total - std::min(total, others_mib);
      const uint64_t free = room - std::min(room, kept_mib);
      return FailedPrecondition(prefix + "insufficient GPU memory: need " +
                                std::to_string(wanted.memory_mib) + " MiB on 1 GPU, largest free " +
                                std::to_string(free) + " MiB (" + GpuName(*gpu) +
                                VirtualMemoryNote(*gpu) + ")");
    }
    if (now->cores > held_cores && (now->cores > 100 || others_cores > 100 - now->cores)) {
      const int free = std::max(0, 100 - others_cores - kept_cores);
      return FailedPrecondition(prefix + "insufficient GPU compute: need " +
                                std::to_string(wanted.cores) + "% cores on 1 GPU, most free " +
                                std::to_string(free) + "% (" + GpuName(*gpu) + ")");
    }
  }
  return resized;
}

}  // namespace tessera::scheduler
