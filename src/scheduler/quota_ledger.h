// QuotaLedger: each namespace's GPU quotas and what counts against them, fed with watch events
// (ResourceQuotas, pods, ResourceClaims, nodes as v1 API objects in JSON), and the check the
// admission webhook makes before it lets a pod or a claim in (quota.h has the units and rules).
//
// What counts: every pod of the namespace that is not Succeeded or Failed (its dialect resources
// through ParsePod; a container its decision marks resized, what the decision holds: AskOfPod),
// every ResourceClaim of the namespace that asks the DeviceClass gpu.tessera.io, and what Admit let
// in during the last `admitted_ttl` that the watches have not shown yet (so that two pods admitted
// a moment apart both count; keyed by UID, which the API server has set before validating
// admission). Shares of a GPU count at the largest GPU of the nodes' inventories. A namespace
// without a ResourceQuota on Tessera's names is never refused anything. Objects that do not parse
// are logged and count nothing. Thread-safe: one mutex, no calls out while held.
//
//   QuotaLedger ledger(dialects);
//   ledger.OnQuota(EventType::kAdded, resource_quota);
//   std::string refused = ledger.Admit("ml", uid, AskOfRequest(request), "container \"main\" ...");
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "annotations/signing.h"
#include "scheduler/cluster_state.h"
#include "scheduler/dialect_config.h"
#include "scheduler/quota.h"

namespace tessera::scheduler {

// The key of a pod or claim in its namespace's ledger: its metadata.uid, or "name:<name>" where it
// has none (a review from an API server that validates before it sets the UID; the watch then
// matches the admission by name).
std::string QuotaKeyOf(const nlohmann::json& object);

class QuotaLedger {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // `signing` verifies the decisions whose resized containers count (unsigned: all are read).
  explicit QuotaLedger(DialectConfig dialects,
                       std::chrono::seconds admitted_ttl = std::chrono::seconds(60),
                       Clock now = std::chrono::steady_clock::now,
                       annotations::Signing signing = {});

  void OnQuota(EventType type, const nlohmann::json& resource_quota);
  void OnPod(EventType type, const nlohmann::json& pod);
  void OnClaim(EventType type, const nlohmann::json& claim);
  void OnNode(EventType type, const nlohmann::json& node);

  // Whether `ask` fits every quota of `ns` beside what the namespace uses: empty when it does (and
  // then, with `record`, it counts as used under `uid` until a watch shows that object or
  // admitted_ttl passes); otherwise the refusal of the first quota it passes (QuotaDenial, with
  // `what` saying what asked). A memory quota refuses an ask of a whole GPU's memory while no GPU
  // node is known, since it cannot be counted yet.
  std::string Admit(const std::string& ns, const std::string& uid, const PodAsk& ask,
                    const std::string& what, bool record = true);

  // Whether the pod of `uid` in `ns` may grow to `resized` (its whole ask after a resize,
  // AskOfPod): empty when it fits every quota of `ns`, else the refusal of the first quota it
  // passes, with what the namespace uses now as used and the growth over the pod's present count as
  // asked (QuotaDenial; `what` says what grows). A shrink always fits. A growth that fits counts
  // as used until the pod's watch event shows it at its new size, ForgetResize, or admitted_ttl
  // passes (so that a pod admitted meanwhile sees it).
  std::string AdmitResize(const std::string& ns, const std::string& uid, const PodAsk& resized,
                          const std::string& what);
  // Drops the growth AdmitResize recorded for the pod of `uid` (its answer was not written).
  void ForgetResize(const std::string& ns, const std::string& uid);

  // What `ns` uses now, as Admit counts it.
  GpuUsage Used(const std::string& ns) const;
  // The limits of `ns`, one per ResourceQuota that sets Tessera's names, by quota name.
  std::vector<QuotaLimits> Limits(const std::string& ns) const;
  // Every namespace with at least one quota, by name: its limits and what it uses (as Used).
  std::vector<NamespaceQuotas> Quotas() const;
  // The most GPU memory (virtual MiB) and the most GPUs of one node, from the inventories.
  uint64_t LargestGpuMiB() const;
  int MaxGpusPerNode() const;

 private:
  struct Admitted {
    PodAsk ask;
    std::chrono::steady_clock::time_point expires;
    GpuUsage resized_to;  // a resize's growth (by UID + kResizeKey): the pod's size after it
  };
  static constexpr char kResizeKey[] = "#resize";
  struct Namespace {
    std::map<std::string, QuotaLimits> quotas;  // by ResourceQuota name
    std::map<std::string, PodAsk> objects;      // pods and claims, by UID
    std::map<std::string, Admitted> admitted;   // admitted, not seen yet, by UID
  };
  struct NodeGpus {
    uint64_t largest_mib = 0;
    int gpus = 0;
  };

  // Records `ask` for `object` (a pod or claim of `ns`), or forgets it when deleted or empty.
  void Track(EventType type, const std::string& ns, const nlohmann::json& object, PodAsk ask);
  // Callers hold mu_.
  GpuUsage UsedLocked(const Namespace& ns, uint64_t largest_mib,
                      std::chrono::steady_clock::time_point now) const;
  uint64_t LargestLocked() const;
  int MaxGpusLocked() const;

  const DialectConfig dialects_;
  const annotations::Signing signing_;
  const std::chrono::seconds admitted_ttl_;
  const Clock now_;
  mutable std::mutex mu_;
  std::map<std::string, Namespace> namespaces_;  // guarded by mu_
  std::map<std::string, NodeGpus> nodes_;        // guarded by mu_
};

}  // namespace tessera::scheduler
