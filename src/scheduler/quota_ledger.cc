#include "scheduler/quota_ledger.h"

#include <algorithm>

#include "common/json_text.h"
#include "log/log.h"
#include "scheduler/dialect.h"
#include "scheduler/protocol.h"

namespace tessera::scheduler {

using nlohmann::json;

namespace {

std::string MetaText(const json& object, const char* key) {
  const json* metadata = Member(object, "metadata");
  return metadata ? TextOf(*metadata, key) : "";
}

bool Finished(const json& pod) {
  const json* status = Member(pod, "status");
  const std::string phase = status ? TextOf(*status, "phase") : "";
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

std::string QuotaKeyOf(const json& object) {
  std::string uid = MetaText(object, "uid");
  return uid.empty() ? "name:" + MetaText(object, "name") : uid;
}

QuotaLedger::QuotaLedger(DialectConfig dialects, std::chrono::seconds admitted_ttl, Clock now,
                         annotations::Signing signing)
    : dialects_(std::move(dialects)),
      signing_(std::move(signing)),
      admitted_ttl_(admitted_ttl),
      now_(std::move(now)) {}

void QuotaLedger::OnQuota(EventType type, const json& resource_quota) {
  const std::string ns = MetaText(resource_quota, "namespace");
  const std::string name = MetaText(resource_quota, "name");
  Result<std::optional<QuotaLimits>> limits = type == EventType::kDeleted
                                                  ? Result<std::optional<QuotaLimits>>(std::nullopt)
                                                  : LimitsOfQuota(resource_quota);
  if (!limits.ok()) {
    log::Warn("ResourceQuota ignored: its GPU limits are not whole quantities",
              {{"quota", ns + "/" + name}, {"error", limits.status().message()}});
  }
  std::lock_guard<std::mutex> lock(mu_);
  Namespace& n = namespaces_[ns];
  if (limits.ok() && *limits) {
    n.quotas[name] = **limits;
  } else {
    n.quotas.erase(name);
  }
}

void QuotaLedger::Track(EventType type, const std::string& ns, const json& object, PodAsk ask) {
  const std::string key = QuotaKeyOf(object);
  // Admitted under its name where the review carried no UID yet.
  const std::string by_name = "name:" + MetaText(object, "name");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = namespaces_.find(ns);
  if (type == EventType::kDeleted || ask.empty()) {
    if (it == namespaces_.end()) return;
    it->second.objects.erase(key);
    // A deleted or finished object no longer counts, even if admitted a moment ago.
    it->second.admitted.erase(key);
    it->second.admitted.erase(by_name);
    it->second.admitted.erase(key + kResizeKey);
    return;
  }
  Namespace& n = it != namespaces_.end() ? it->second : namespaces_[ns];
  // The watch shows it now: counted once, as an object.
  n.admitted.erase(key);
  n.admitted.erase(by_name);
  // A resize's growth is counted by the object once it shows the new size (an older event does
  // not).
  if (auto r = n.admitted.find(key + kResizeKey); r != n.admitted.end()) {
    const GpuUsage counted = ask.Resolve(LargestLocked());
    if (counted.memory_bytes >= r->second.resized_to.memory_bytes &&
        counted.cores >= r->second.resized_to.cores) {
      n.admitted.erase(r);
    }
  }
  n.objects[key] = std::move(ask);
}

void QuotaLedger::OnPod(EventType type, const json& pod) {
  PodAsk ask;
  // A pod that ends frees its GPUs; one rewritten to DRA names no dialect resource, its claims
  // count instead.
  if (type != EventType::kDeleted && !Finished(pod)) {
    Result<PodRequest> request = ParsePod(pod, dialects_);
    if (request.ok()) {
      // A resized container counts as its decision holds it; a decision that does not verify
      // (the scheduler counts and reports it) is not taken.
      const json* metadata = Member(pod, "metadata");
      const json* annotations = metadata ? Member(*metadata, "annotations") : nullptr;
      const std::string text = annotations ? TextOf(*annotations, kAllocationAnnotation) : "";
      std::optional<Allocation> decision;
      if (!text.empty() && signing_.Check(pod, kAllocationAnnotation, "").ok()) {
        if (Result<Allocation> parsed = ParseAllocation(text); parsed.ok()) {
          decision = std::move(*parsed);
        }
      }
      ask = AskOfPod(*request, decision ? &*decision : nullptr);
    } else if (type == EventType::kAdded) {  // a pod's resources never change: once is enough
      log::Warn("pod not counted against GPU quotas: its GPU request does not parse",
                {{"pod", MetaText(pod, "namespace") + "/" + MetaText(pod, "name")},
                 {"error", request.status().message()}});
    }
  }
  Track(type, MetaText(pod, "namespace"), pod, std::move(ask));
}

void QuotaLedger::OnClaim(EventType type, const json& claim) {
  PodAsk ask;
  if (type != EventType::kDeleted) {
    int max_gpus = MaxGpusPerNode();
    const json* spec = Member(claim, "spec");
    Result<GpuAsk> asked = spec ? AskOfClaimSpec(*spec, max_gpus) : Result<GpuAsk>(GpuAsk{});
    if (asked.ok()) {
      ask.app = *asked;
    } else if (type == EventType::kAdded) {  // a claim's spec never changes: once is enough
      log::Warn("ResourceClaim not counted against GPU quotas",
                {{"claim", MetaText(claim, "namespace") + "/" + MetaText(claim, "name")},
                 {"error", asked.status().message()}});
    }
  }
  Track(type, MetaText(claim, "namespace"), claim, std::move(ask));
}

void QuotaLedger::OnNode(EventType type, const json& node) {
  const std::string name = MetaText(node, "name");
  NodeGpus gpus;
  if (type != EventType::kDeleted) {
    const json* metadata = Member(node, "metadata");
    const json* annotations = metadata ? Member(*metadata, "annotations") : nullptr;
    std::string text = annotations ? TextOf(*annotations, kInventoryAnnotation) : "";
    if (!text.empty()) {
      // A bad inventory is reported by the scheduler's state; here it only counts no GPU.
      if (Result<Inventory> inventory = ParseInventory(text); inventory.ok()) {
        for (const GpuInfo& g : inventory->gpus) {
          gpus.largest_mib = std::max(gpus.largest_mib, g.virtual_memory_mib());
          gpus.gpus += g.shareable() ? 1 : 0;
        }
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (gpus.largest_mib == 0) {
    nodes_.erase(name);
  } else {
    nodes_[name] = gpus;
  }
}

uint64_t QuotaLedger::LargestLocked() const {
  uint64_t largest = 0;
  for (const auto& [name, n] : nodes_) largest = std::max(largest, n.largest_mib);
  return largest;
}

int QuotaLedger::MaxGpusLocked() const {
  int most = 0;
  for (const auto& [name, n] : nodes_) most = std::max(most, n.gpus);
  return most;
}

uint64_t QuotaLedger::LargestGpuMiB() const {
  std::lock_guard<std::mutex> lock(mu_);
  return LargestLocked();
}

int QuotaLedger::MaxGpusPerNode() const {
  std::lock_guard<std::mutex> lock(mu_);
  return MaxGpusLocked();
}

GpuUsage QuotaLedger::UsedLocked(const Namespace& ns, uint64_t largest_mib,
                                 std::chrono::steady_clock::time_point now) const {
  GpuUsage used;
  for (const auto& [uid, ask] : ns.objects) used += ask.Resolve(largest_mib);
  for (const auto& [uid, admitted] : ns.admitted) {
    if (admitted.expires > now) used += admitted.ask.Resolve(largest_mib);
  }
  return used;
}

GpuUsage QuotaLedger::Used(const std::string& ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end()) return {};
  return UsedLocked(it->second, LargestLocked(), now_());
}

std::vector<QuotaLimits> QuotaLedger::Limits(const std::string& ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<QuotaLimits> out;
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end()) return out;
  for (const auto& [name, limits] : it->second.quotas) out.push_back(limits);
  return out;
}

std::vector<NamespaceQuotas> QuotaLedger::Quotas() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NamespaceQuotas> out;
  const uint64_t largest = LargestLocked();
  const auto now = now_();
  for (const auto& [name, n] : namespaces_) {
    if (n.quotas.empty()) continue;
    NamespaceQuotas q{name, {}, UsedLocked(n, largest, now)};
    for (const auto& [quota, limits] : n.quotas) q.limits.push_back(limits);
    out.push_back(std::move(q));
  }
  return out;
}

std::string QuotaLedger::AdmitResize(const std::string& ns, const std::string& uid,
                                     const PodAsk& resized, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end() || it->second.quotas.empty()) return "";
  Namespace& n = it->second;
  n.admitted.erase(uid + kResizeKey);  // an earlier answer's growth, not written or shown
  const uint64_t largest = LargestLocked();
  auto object = n.objects.find(uid);
  const GpuUsage now = object != n.objects.end() ? object->second.Resolve(largest) : GpuUsage{};
  const GpuUsage after = resized.Resolve(largest);
  GpuUsage growth{std::max<int64_t>(0, after.memory_bytes - now.memory_bytes),
                  std::max<int64_t>(0, after.cores - now.cores)};
  if (growth.memory_bytes == 0 && growth.cores == 0) return "";
  const auto at = now_();
  const GpuUsage used = UsedLocked(n, largest, at);
  for (const auto& [name, limits] : n.quotas) {
    if (std::string refused = QuotaDenial(ns, limits, used, growth, what); !refused.empty()) {
      return refused;
    }
  }
  n.admitted[uid + kResizeKey] = {
      .ask = {.app = {.memory_bytes = growth.memory_bytes, .cores = growth.cores}},
      .expires = at + admitted_ttl_,
      .resized_to = after};
  return "";
}

void QuotaLedger::ForgetResize(const std::string& ns, const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = namespaces_.find(ns);
  if (it != namespaces_.end()) it->second.admitted.erase(uid + kResizeKey);
}

std::string QuotaLedger::Admit(const std::string& ns, const std::string& uid, const PodAsk& ask,
                               const std::string& what, bool record) {
  if (ask.empty()) return "";
  std::lock_guard<std::mutex> lock(mu_);
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end() || it->second.quotas.empty()) return "";
  Namespace& n = it->second;
  const uint64_t largest = LargestLocked();
  bool shares_memory = ask.app.memory_percent > 0 ||
                       std::any_of(ask.init.begin(), ask.init.end(),
                                   [](const GpuAsk& a) { return a.memory_percent > 0; });
  const GpuUsage asked = ask.Resolve(largest);
  const auto now = now_();
  std::erase_if(n.admitted, [&](const auto& a) { return a.second.expires <= now; });
  // An object admitted before under this UID (a retried review) counts once.
  if (record) n.admitted.erase(uid);
  const GpuUsage used = UsedLocked(n, largest, now);
  for (const auto& [name, limits] : n.quotas) {
    if (limits.memory_bytes && shares_memory && largest == 0) {
      return "namespace " + ns + ": GPU memory quota " + BytesText(*limits.memory_bytes) +
             " (ResourceQuota " + name + "): " + what +
             " asks for a share of a whole GPU's memory, which cannot be counted before the "
             "scheduler knows a GPU node; give the memory in bytes, or try again when GPU "
             "nodes have registered";
    }
    if (std::string refused = QuotaDenial(ns, limits, used, asked, what); !refused.empty()) {
      return refused;
    }
  }
  if (record && n.objects.find(uid) == n.objects.end()) {
    n.admitted[uid] = {ask, now + admitted_ttl_};
  }
  return "";
}

}  // namespace tessera::scheduler
