// Allocator: the node agent's answers to kubelet's GetPreferredAllocation, Allocate and
// PreStartContainer, independent of gRPC (the device plugin servers translate and delegate).
//
// Kubelet's calls carry device IDs only. Allocate guesses the owner (the likeliest candidate pod,
// see AllocateCandidates) and already writes limits and CDI spec for it, or for no GPU when there
// is no candidate. PreStartContainer finds the real owner through kubelet's PodResources, reads
// its decision (`tessera.io/allocation`) from the pod cache and rewrites both files atomically;
// pods without a decision get the whole GPUs behind the device IDs kubelet chose. A decision that
// cannot be honoured fails the call with an error naming the pod and the reason, and marks the pod
// (`tessera.io/allocation-failed`) so the scheduler frees it.
//
// Files: <state-dir>/allocations/<id>/limits (mounted read-only at /var/run/tessera),
// <state-dir>/regions/<id>/ (read-write at /var/run/tessera-region), <state-dir>/ld.so.preload,
// <cdi-dir>/tessera.io-container-<id>.json.
//
// Thread-safe: one mutex guards the guesses and the GPU list; files are written outside it.
// Allocate calls are serialised (kubelet admits one pod at a time anyway), so two of them never
// pick the same candidate.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "node/gpu.h"
#include "node/grant.h"
#include "node/pod_resources.h"
#include "node/pod_source.h"
#include "node/pod_view.h"
#include "node/resources.h"

namespace tessera::node {

struct AllocatorOptions {
  std::string node_name;
  std::string state_dir = "/var/lib/tessera";
  std::string cdi_dir = "/var/run/cdi";
  std::string library_path = "/usr/local/lib/tessera/libtessera-cuda.so";  // on the host
  std::string driver_root = "/";  // the host's GPU device nodes are under <driver_root>/dev
  bool cdi = true;                // false: NVIDIA_VISIBLE_DEVICES instead of a CDI device
  int split_count = 10;
  // How long Allocate waits for its pod to reach the pod cache when no pod of the node asks for the
  // devices yet: kubelet calls Allocate once, as soon as it admits the pod, and the agent's watch
  // may not have seen the pod by then.
  std::chrono::milliseconds owner_wait{0};
};

struct MountSpec {
  std::string container_path, host_path;
  bool read_only = true;
};

// The answer for one container of an Allocate call.
struct AllocateAnswer {
  std::string allocation_id;
  std::string cdi_device;  // empty when CDI is off or the resource only counts here
  std::vector<MountSpec> mounts;
  std::map<std::string, std::string> envs;
};

class Allocator {
 public:
  // The sources must outlive the Allocator.
  Allocator(AllocatorOptions options, std::vector<ResourceSpec> resources, PodSource& pods,
            ApiWriter& writer, PodResourcesSource& kubelet);

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

  // Drops what is remembered about an allocation whose files were removed.
  void Forget(const std::string& id);

  std::string AllocationDir(const std::string& id) const;
  std::string CdiSpecPath(const std::string& id) const;

 private:
  struct Guess {
    std::string resource;
    ContainerRef owner;  // empty uid: no candidate
    bool counts_only = false;
    std::vector<std::string> visible;  // UUIDs given through NVIDIA_VISIBLE_DEVICES
  };
  const ResourceSpec* FindResource(const std::string& name) const;
  // The grant for `owner`, whose pod is `pod` (its decision, or whole GPUs behind `device_ids`).
  Result<Grant> GrantFor(const nlohmann::json& pod, const ContainerRef& owner,
                         const std::vector<std::string>& device_ids,
                         const std::vector<GpuInfo>& gpus) const;
  Status WriteFiles(const std::string& id, const Grant& grant, const ContainerRef& owner,
                    const std::vector<GpuInfo>& gpus);
  Status RecordAllocated(const ContainerRef& owner, const std::string& id, const Grant& grant);
  Status Fail(const ContainerRef& owner, const std::string& reason);
  // AllocateCandidates over `pods`, leaving out the containers already guessed or found for
  // allocations of `resource`.
  std::vector<ContainerRef> Candidates(const std::vector<PodRef>& pods, const std::string& resource,
                                       int64_t count) const;
  // Sets or drops (nullopt) the guess of allocation `id`, keeping owners_ in step (mu_ held).
  void SetGuessLocked(const std::string& id, std::optional<Guess> guess);

  const AllocatorOptions options_;
  const std::vector<ResourceSpec> resources_;
  PodSource& pods_;
  ApiWriter& writer_;
  PodResourcesSource& kubelet_;

  std::mutex allocate_mu_;  // held through each Allocate
  mutable std::mutex mu_;
  std::vector<GpuInfo> gpus_;             // guarded by mu_
  std::map<std::string, Guess> guesses_;  // by allocation ID; guarded by mu_
  // Per pod UID, (resource, container) of every guess owned by one of its containers, so that
  // finding the candidates of an Allocate does not walk all guesses; guarded by mu_.
  std::unordered_map<std::string, std::vector<std::pair<std::string, std::string>>> owners_;

  // tessera.io/allocated as this agent last wrote it, per pod UID, until the pod cache shows it:
  // the containers of one pod start one after the other faster than the watch brings back each
  // write, and each write rewrites the whole annotation (only this agent writes it).
  struct Recorded {
    std::string ns, pod;
    nlohmann::json value;
  };
  std::mutex recorded_mu_;                              // held through each RecordAllocated
  std::unordered_map<std::string, Recorded> recorded_;  // guarded by recorded_mu_
};

}  // namespace tessera::node
