// Allocator: the node agent's answers to kubelet's GetPreferredAllocation, Allocate and
// PreStartContainer, independent of gRPC (the device plugin servers translate and delegate).
//
// Allocate draws a new allocation ID, writes its files for no GPU and answers with their mounts
// (and CDI device). PreStart finds the containers that hold its device IDs in kubelet's device
// checkpoint and rewrites every allocation of each with its pod's `tessera.io/allocation` (no
// decision: the whole GPUs behind the IDs). A case that cannot be decided exactly, or a decision
// whose signature does not verify, refuses the container saying why; a decision that cannot be
// honoured fails the call naming the pod and the reason, and marks the pod
// `tessera.io/allocation-failed`. Nothing is kept in memory between calls.
// Thread-safe; the file writes of one PreStartContainer are serialised with the others'.
//
//   ASSIGN_OR_RETURN(AllocateAnswer answer, allocator.Allocate("nvidia.com/gpu", {"0-3"}));
//   RETURN_IF_ERROR(allocator.PreStart("nvidia.com/gpu", {"0-3"}));  // before each start
//
// Files and why: docs/node-agent.md, "Allocation ID, files and mounts" and "The pod mapping".
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "annotations/signing.h"
#include "common/status.h"
#include "node/allocation/allocation_files.h"
#include "node/allocation/allocation_recorder.h"
#include "node/allocation/grant.h"
#include "node/allocation/pod_view.h"
#include "node/gpu/gpu.h"
#include "node/kubelet/kubelet_checkpoint.h"
#include "node/kubelet/resources.h"
#include "node/pods/pod_source.h"

namespace tessera::node {

struct AllocatorOptions {
  std::string node_name;
  std::string state_dir = "/var/lib/tessera";
  std::string cdi_dir = "/var/run/cdi";
  std::string library_path = "/usr/local/lib/tessera/libtessera-cuda.so";  // on the host
  std::string driver_root = "/";  // the host's GPU device nodes are under <driver_root>/dev
  // true: a CDI device per allocation (kubelet 1.29+); false: the device nodes of the GPUs behind
  // the device IDs in the Allocate answer, plus NVIDIA_VISIBLE_DEVICES.
  bool cdi = true;
  int split_count = 10;
  // Verifies tessera.io/allocation (annotations/signing.h); unsigned mode when it has no keys.
  annotations::Signing signing;
};

// The answer for one container of an Allocate call.
struct AllocateAnswer {
  std::string allocation_id;
  std::string cdi_device;  // empty when CDI is off
  std::vector<MountSpec> mounts;
  std::vector<DeviceNode> devices;  // with CDI off
  std::map<std::string, std::string> envs;
};

// Whether `grant` fits this node's `gpus`: each GPU (or MIG device) on the node, listed once, and
// no more memory than it has; a GPU in MIG mode only through its MIG devices (FailedPrecondition
// for the GPU itself). Pure; an error names the GPU and what is wrong.
Status CheckGrant(const Grant& grant, const std::vector<GpuInfo>& gpus);

class Allocator {
 public:
  // The sources must outlive the Allocator.
  Allocator(AllocatorOptions options, std::vector<ResourceSpec> resources, PodSource& pods,
            AllocationRecorder& recorder, DeviceAssignments& kubelet);

  // Creates the state folders and the ld.so.preload file.
  Status Init();
  void SetGpus(std::vector<GpuInfo> gpus);
  std::vector<GpuInfo> Gpus() const;

  // `size` IDs from `available`, `must_include` first, then IDs on the GPUs the likeliest pending
  // container was given (spread over them), then IDs on the fewest other GPUs.
  std::vector<std::string> Preferred(const std::string& resource,
                                     const std::vector<std::string>& available,
                                     const std::vector<std::string>& must_include, int size);

  Result<AllocateAnswer> Allocate(const std::string& resource,
                                  const std::vector<std::string>& device_ids);

  Status PreStart(const std::string& resource, const std::vector<std::string>& device_ids);

  // Replaces the limits file of allocation `id` with `content` unless it holds exactly that,
  // serialised with PreStart's writes (a resize, limits_refresher.h). True when it was rewritten.
  Result<bool> RewriteLimits(const std::string& id, const std::string& content);

  std::string AllocationDir(const std::string& id) const;
  std::string RegionDir(const std::string& id) const;
  std::string CdiSpecPath(const std::string& id) const;
  const std::string& cdi_dir() const { return options_.cdi_dir; }

 private:
  const ResourceSpec* FindResource(const std::string& name) const;
  // The grant for `owner`, whose pod is `pod` (its decision, or whole GPUs behind `device_ids`).
  // The caller has checked the decision's signature.
  Result<Grant> GrantFor(const nlohmann::json& pod, const ContainerRef& owner,
                         const std::vector<std::string>& device_ids,
                         const std::vector<GpuInfo>& gpus) const;
  Status WriteFiles(const std::string& id, const Grant& grant, const nlohmann::json& owner,
                    const std::vector<GpuInfo>& gpus);
  // Writes the files of every allocation of `owner` (its `held` entries) for its decision.
  Status Prepare(const nlohmann::json& pod, const ContainerRef& owner,
                 const std::vector<DeviceAssignment>& held, const std::vector<GpuInfo>& gpus);
  Status Fail(const ContainerRef& owner, const std::string& reason);

  const AllocatorOptions options_;
  const std::vector<ResourceSpec> resources_;
  PodSource& pods_;
  AllocationRecorder& recorder_;
  DeviceAssignments& kubelet_;

  mutable std::mutex mu_;
  std::vector<GpuInfo> gpus_;  // guarded by mu_
  std::mutex write_mu_;        // held through the file writes of each call
};

}  // namespace tessera::node
