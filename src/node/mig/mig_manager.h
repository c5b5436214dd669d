// MigManager: changes a GPU's MIG instances through NVML, the way NVIDIA's mig-parted does, and
// never under a user: an instance is in use while a process runs on it (the driver's process
// list) or a container's allocation names its MIG device (`held`, the allocation folders' UUIDs).
//
//   MigManager mig(nvml, minors);
//   Result<MigApplyResult> r = mig.ApplyFixed(gpu, setting, held);   // fixed mode
//   Result<MigInstanceInfo> i = mig.CreateFor(gpu, {.memory_mib = 8192});  // dynamic mode
//   Status s = mig.Destroy(gpu, i->uuid, held);
//
// Thread-safe: one operation at a time (a mutex), so two containers starting at once cannot race
// for one placement. NVML must outlive the manager.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "mig/layout.h"
#include "mig/policy.h"
#include "node/gpu/gpu.h"
#include "node/gpu/nvml_library.h"
#include "node/mig/mig_config.h"
#include "node/mig/mig_discovery.h"

namespace tessera::node {

// What one apply did and left undone, each line with its reason (the agent logs them).
struct MigApplyResult {
  std::vector<std::string> done;  // "enabled MIG mode", "created 3g.40gb@4 (MIG-...): ..."
  std::vector<std::string> left;  // "1g.10gb@6 (MIG-...) is in use by PID 4242: left alone"
  bool reset_needed = false;      // MIG mode is pending until the GPU is reset
  bool complete() const { return left.empty() && !reset_needed; }
};

class MigManager {
 public:
  MigManager(const NvmlLibrary& nvml, MigMinors minors) : nvml_(nvml), minors_(std::move(minors)) {}

  // Makes MIG mode current on `gpu` when it is not: enabled at once when no process uses the
  // GPU; otherwise the mode stays pending, `reset_needed` is set and `left` says what the
  // operator must do (reset the GPU when idle, or reboot). When a container's allocation names
  // the GPU itself (`held`; in MIG mode it would be no CUDA device, so the share would be lost),
  // nothing is changed and `left` says so. `left` is empty exactly when MIG mode is on.
  // FailedPrecondition when the GPU has no MIG.
  Result<MigApplyResult> EnsureMigMode(const GpuInfo& gpu, const std::set<std::string>& held);

  // Fixed mode: EnsureMigMode (with `held`), then the GPU's GPU instances made to match the
  // setting's layout. Instances already there of a profile the layout wants are kept where they are
  // when the layout's counts allow it (a list without starts, all-<profile>, all-balanced); the
  // others are destroyed unless in use; missing ones are created (with their full compute instance)
  // unless an instance in use is in the way. An instance that the driver finds in use while
  // destroying it (a process started after the check) is a `left` line. Errors: the setting
  // does not fit the GPU (CheckMigSetting), or NVML fails; the changes made before the failure
  // are logged ("MIG change") before the error returns.
  Result<MigApplyResult> ApplyFixed(const GpuInfo& gpu, const MigSetting& setting,
                                    const std::set<std::string>& held);

  // Dynamic mode: creates a GPU instance of `profile` at `start` and its full compute instance;
  // returns its MIG device. InvalidArgument for a start the profile never takes,
  // ResourceExhausted when instances are in the way (mig::Layout's reasons), FailedPrecondition
  // when MIG mode is not on.
  Result<MigInstanceInfo> Create(const GpuInfo& gpu, const std::string& profile, int start);
  // Dynamic mode: the profile and start src/mig's policy (mig::Choose) picks for `request` on
  // the GPU's instances now, then Create. Choose's errors as they are.
  Result<MigInstanceInfo> CreateFor(const GpuInfo& gpu, const mig::Request& request);
  // Destroys the GPU instance of the MIG device `uuid` with its compute instances.
  // FailedPrecondition (naming the PIDs or the allocation) while it is in use; NotFound when the
  // GPU has no such MIG device.
  Status Destroy(const GpuInfo& gpu, const std::string& uuid, const std::set<std::string>& held);
  // Dynamic mode's sweep: destroys every GPU instance of the GPU that nothing uses (one the
  // driver finds in use when destroying it stays); returns what it destroyed ("1g.10gb@6
  // (MIG-...)").
  Result<std::vector<std::string>> DestroyUnused(const GpuInfo& gpu,
                                                 const std::set<std::string>& held);

  // The GPU's MIG state now (node/mig/mig_discovery.h), `mode` left kNone.
  Result<MigStatus> Discover(const GpuInfo& gpu) const;
  // The GPU's GPU instances as a mig::Layout of its model.
  Result<mig::Layout> CurrentLayout(const GpuInfo& gpu) const;

 private:
  struct Gi;  // one GPU instance found through NVML
  Result<nvmlDevice_t> Handle(const GpuInfo& gpu) const;
  Result<std::vector<Gi>> GpuInstances(const GpuInfo& gpu, nvmlDevice_t dev) const;
  // Why the GPU instance is in use ("PID 4242", "a container's allocation"), or "".
  Result<std::string> InUse(nvmlDevice_t dev, const Gi& gi,
                            const std::set<std::string>& held) const;
  Result<int> CreateGi(nvmlDevice_t dev, const mig::GpuInstanceProfile& profile, int start);
  // Destroys the GPU instance with its compute instances. Returns false, having destroyed
  // nothing more, when the driver answers that a process uses it (NVML_ERROR_IN_USE).
  Result<bool> DestroyGi(const GpuInfo& gpu, const Gi& gi);
  // ApplyFixed after MIG mode is on: the instances made to match `planned`, each change added
  // to `out` as it is made (so a later failure still has them).
  Status ApplyLayoutLocked(const GpuInfo& gpu, const MigSetting& setting,
                           const mig::Layout& planned, const std::set<std::string>& held,
                           MigApplyResult& out);
  Result<MigInstanceInfo> CreateLocked(const GpuInfo& gpu, const mig::GpuInstanceProfile& profile,
                                       int start);
  Result<MigApplyResult> EnsureMigModeLocked(const GpuInfo& gpu, const std::set<std::string>& held);

  const NvmlLibrary& nvml_;
  const MigMinors minors_;
  std::mutex mu_;  // one change at a time
};

// At the agent's start: CheckMigConfig, then per GPU its mode's start work (fixed: ApplyFixed;
// dynamic: EnsureMigMode; none: nothing), each action and what was left logged with its reason.
// An invalid configuration or an NVML failure is an error naming the GPU.
Status ApplyMigConfig(MigManager& manager, const MigConfig& config,
                      const std::vector<GpuInfo>& gpus, const std::set<std::string>& held);

}  // namespace tessera::node
