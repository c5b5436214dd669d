// SpillNotices: one Event on the pod when a container first has GPU memory served from host
// memory (node.device-memory-scaling above 1: the library spills what the full GPU cannot hold,
// docs/in-container-library.md). Kernels that read spilled memory run many times slower, so the
// pod's owner is told once, with what to do about it; the figures stay in the metric
// tessera_container_memory_spilled_bytes, which reads the same region figures
// (metrics/region_figures.h).
//
// Once per container's allocation: after the Event is recorded, the allocation folder gets the
// file kSpillNoticeFile, which survives a restart of the agent and goes with the folder when the
// housekeeper removes it. A container restarted by kubelet keeps its allocation, so it is not told
// again. An Event the API server refuses leaves no file: the next Check tries again. DRA claims'
// folders are left out (a claim may serve several pods; its metric shows its spill).
//
// Check() from one thread (the agent's housekeeping loop, which also removes folders); notices()
// from any.
//
//   SpillNotices notices(writer, state_dir);
//   notices.Check(ReadAllocationFolders(state_dir), gpus);  // every 2 s
#pragma once

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "node/allocation/allocation_folders.h"
#include "node/gpu/gpu.h"
#include "node/pods/pod_source.h"

namespace tessera::node {

// The file in an allocation folder that says its container's first spill was recorded (it holds
// the Event's message).
inline constexpr const char* kSpillNoticeFile = "spill-noticed";
inline constexpr const char* kSpillEventReason = "GPUMemorySpilled";

// One device of a container whose memory is partly served from host memory.
struct SpilledDevice {
  std::string uuid;
  int gpu_index = -1;  // the GPU's index on the node; -1 when the agent does not know the GPU
  uint64_t spilled_bytes = 0;
};

// The Event's message for container `container` and its spilled devices (at least one).
std::string SpillMessage(const std::string& container, const std::vector<SpilledDevice>& devices);

class SpillNotices {
 public:
  // `state_dir`: the agent's state folder, whose regions/<id>/region each folder's processes map.
  SpillNotices(ApiWriter& writer, std::string state_dir)
      : writer_(writer), state_dir_(std::move(state_dir)) {}

  // For each container's folder in `folders` without kSpillNoticeFile: reads its region and, when
  // any device has spilled bytes, records a Warning Event on the pod and writes the file. `gpus`
  // (the node's) gives the GPUs' indices in the message.
  void Check(const std::vector<AllocationFolder>& folders, const std::vector<GpuInfo>& gpus);

  // Events recorded.
  uint64_t notices() const { return notices_.load(); }

 private:
  ApiWriter& writer_;
  const std::string state_dir_;
  // Allocations told in this agent's life: should the file not be written, no second Event.
  std::set<std::string> told_;
  std::atomic<uint64_t> notices_{0};
};

}  // namespace tessera::node
