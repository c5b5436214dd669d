#include "scheduler/cluster_state.h"

#include <algorithm>
#include <unordered_set>

#include "common/json_text.h"
#include "log/log.h"

namespace tessera::scheduler {
namespace {

using json = nlohmann::json;

std::string StringAt(const json& object, const char* a, const char* b) {
  const json* first = Member(object, a);
  const json* second = first ? Member(*first, b) : nullptr;
  return second && second->is_string() ? second->get<std::string>() : std::string();
}

const json* Annotations(const json& object) {
  const json* metadata = Member(object, "metadata");
  const json* annotations = metadata ? Member(*metadata, "annotations") : nullptr;
  return annotations && annotations->is_object() ? annotations : nullptr;
}

std::string Annotation(const json& object, const char* key) {
  const json* annotations = Annotations(object);
  const json* v = annotations ? Member(*annotations, key) : nullptr;
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// Names, values and signatures of an object's refused annotations, hashed; never 0.
template <typename Refusals>
size_t Fingerprint(const json& object, const Refusals& refusals) {
  std::string text;
  for (const auto& r : refusals) {
    const std::string signature = std::string(r.annotation) + annotations::kSignatureSuffix;
    text.append(r.annotation).append("\n").append(Annotation(object, r.annotation));
    text.append("\n").append(Annotation(object, signature.c_str())).append("\n");
  }
  size_t h = std::hash<std::string>{}(text);
  return h == 0 ? 1 : h;
}

int IntAt(const json& object, const char* a, const char* b) {
  const json* first = Member(object, a);
  const json* second = first ? Member(*first, b) : nullptr;
  return second && second->is_number_integer() ? second->get<int>() : 0;
}

void AddUsage(GpuSlot& to, const GpuSlot& from) {
  to.used_mib += from.used_mib;
  to.used_cores += from.used_cores;
  to.used_slots += from.used_slots;
  to.pods += from.pods;
  to.exclusive_pods += from.exclusive_pods;
}

}  // namespace

ClusterState::ClusterState(DialectConfig dialects, annotations::Signing signing)
    : dialects_(std::move(dialects)), signing_(std::move(signing)) {}

void ClusterState::Report(const std::vector<Refusal>& refusals, size_t fingerprint,
                          size_t* last) const {
  if (last && *last == fingerprint) return;
  for (const Refusal& r : refusals) signing_.Refused(r.annotation, r.why, r.action);
  if (last) *last = fingerprint;
}

ClusterState::Shard& ClusterState::ShardOf(const std::string& key) const {
  return shards_[std::hash<std::string>{}(key) % kShards];
}

NodeState* ClusterState::Find(const std::string& name) const {
  std::shared_lock<std::shared_mutex> lock(nodes_mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second.get();
}

void ClusterState::FindAll(std::span<const std::string> names,
                           std::vector<const NodeState*>& out) const {
  out.clear();
  out.reserve(names.size());
  std::shared_lock<std::shared_mutex> lock(nodes_mu_);
  for (const std::string& name : names) {
    auto it = nodes_.find(name);
    out.push_back(it == nodes_.end() ? nullptr : it->second.get());
  }
}

NodeState& ClusterState::FindOrAdd(const std::string& name) {
  if (NodeState* n = Find(name)) return *n;
  std::unique_lock<std::shared_mutex> lock(nodes_mu_);
  std::unique_ptr<NodeState>& slot = nodes_[name];
  if (!slot) slot = std::make_unique<NodeState>();
  return *slot;
}

Status ClusterState::OnNode(EventType type, const json& node) {
  std::string name = StringAt(node, "metadata", "name");
  if (name.empty()) return InvalidArgument("node event without metadata.name");
  std::vector<GpuInfo> inventory;
  bool serving = true;
  std::string error;
  const bool deleted = type == EventType::kDeleted;
  bool has_annotation = false;
  std::vector<Refusal> refusals;
  if (!deleted) {
    std::string text = Annotation(node, kInventoryAnnotation);
    has_annotation = !text.empty();
    Status verified =
        has_annotation ? signing_.Check(node, kInventoryAnnotation, "node " + name) : Status::Ok();
    if (text.empty()) {
      error = std::string("no ") + kInventoryAnnotation + " annotation (not a Tessera GPU node)";
    } else if (!verified.ok()) {
      error = verified.message();
      refusals.push_back({kInventoryAnnotation, error, "not used: the node gets no GPU pods"});
    } else {
      Result<Inventory> parsed = ParseInventory(text);
      if (parsed.ok()) {
        serving = parsed->serving;
        inventory = std::move(parsed->gpus);
      } else {
        error = parsed.status().message();
        log::Warn("ignoring the GPU inventory of a node", {{"node", name}, {"error", error}});
      }
    }
  }
  NodeState& n = FindOrAdd(name);
  std::lock_guard<std::mutex> lock(n.mu);
  if (refusals.empty()) {
    n.refused = 0;
  } else {
    Report(refusals, Fingerprint(node, refusals), &n.refused);
  }
  const bool present = !deleted && error.empty();
  n.serving = serving;
  if (present && n.present && inventory.size() == n.slots.size() &&
      std::equal(inventory.begin(), inventory.end(), n.slots.begin(),
                 [](const GpuInfo& a, const GpuSlot& b) { return a == b.info; })) {
    return Status::Ok();  // unchanged inventory (most node updates are status heartbeats)
  }
  // Re-key all usage by UUID onto the new inventory; what it does not list stays as orphans.
  std::map<std::string, GpuSlot> usage = std::move(n.orphans);
  n.orphans.clear();
  for (GpuSlot& s : n.slots) {
    GpuSlot& u = usage[s.info.uuid];
    u.info.uuid = s.info.uuid;
    AddUsage(u, s);
  }
  n.slots.clear();
  for (GpuInfo& info : inventory) {
    GpuSlot slot;
    auto it = usage.find(info.uuid);
    if (it != usage.end()) {
      AddUsage(slot, it->second);
      usage.erase(it);
    }
    slot.info = std::move(info);
    n.slots.push_back(std::move(slot));
  }
  for (auto& [uuid, u] : usage) {
    if (u.pods > 0) n.orphans.emplace(uuid, u);
  }
  n.present = present;
  n.inventory_error = deleted ? "node deleted" : error;
  return error.empty() || deleted || !has_annotation ? Status::Ok() : InvalidArgument(error);
}

void ClusterState::ApplyToNode(NodeState& node, const std::vector<GpuCharge>& charges, int sign) {
  for (const GpuCharge& c : charges) {
    GpuSlot* slot = nullptr;
    for (GpuSlot& s : node.slots) {
      if (s.info.uuid == c.uuid) {
        slot = &s;
        break;
      }
    }
    if (!slot) {
      slot = &node.orphans[c.uuid];
      slot->info.uuid = c.uuid;
    }
    if (sign > 0) {
      slot->used_mib += c.memory_mib;
      slot->used_cores += c.cores;
      slot->used_slots += c.slots;
    } else {
      slot->used_mib -= std::min(slot->used_mib, c.memory_mib);
      slot->used_cores -= std::min(slot->used_cores, c.cores);
      slot->used_slots -= std::min(slot->used_slots, c.slots);
    }
    slot->pods += sign;
    slot->exclusive_pods += c.exclusive ? sign : 0;
    if (slot->pods <= 0 && node.orphans.count(c.uuid)) node.orphans.erase(c.uuid);
  }
}

void ClusterState::ApplyCharges(const std::string& node, const std::vector<GpuCharge>& charges,
                                int sign) {
  if (charges.empty()) return;
  NodeState& n = FindOrAdd(node);
  std::lock_guard<std::mutex> lock(n.mu);
  ApplyToNode(n, charges, sign);
}

void ClusterState::ReleaseLocked(PodRecord& record) {
  ApplyCharges(record.node, record.charges, -1);
  record.charges.clear();
  record.allocation.reset();
  record.reserved = false;
  record.node.clear();
}

Status ClusterState::OnPod(EventType type, const json& pod) {
  // Counted when the event has been applied, for binds waiting on the watch.
  struct Counted {
    ClusterState& s;
    ~Counted() {
      {
        std::lock_guard<std::mutex> lock(s.events_mu_);
        ++s.pod_events_;
      }
      s.events_cv_.notify_all();
    }
  } counted{*this};
  PodId id{StringAt(pod, "metadata", "namespace"), StringAt(pod, "metadata", "name"),
           StringAt(pod, "metadata", "uid")};
  if (id.name.empty()) return InvalidArgument("pod event without metadata.name");
  if (id.ns.empty()) id.ns = "default";
  const std::string key = id.Key();
  const std::string phase = StringAt(pod, "status", "phase");
  const std::string node = StringAt(pod, "spec", "nodeName");
  const std::string what = "pod " + key;
  const bool ended = type == EventType::kDeleted || phase == "Succeeded" || phase == "Failed";
  std::vector<Refusal> refusals;
  bool failed = false;
  if (!ended && !Annotation(pod, kAllocationFailedAnnotation).empty()) {
    Status verified = signing_.Check(pod, kAllocationFailedAnnotation, what);
    failed = verified.ok();
    if (!failed) {
      refusals.push_back(
          {kAllocationFailedAnnotation, verified.message(), "ignored: the pod keeps its charge"});
    }
  }
  const bool gone = ended || failed;

  Status problem;
  std::optional<Allocation> allocation;
  bool verified = false;
  if (!gone && !node.empty()) {
    std::string text = Annotation(pod, kAllocationAnnotation);
    if (!text.empty()) {
      Status checked = signing_.Check(pod, kAllocationAnnotation, what);
      verified = checked.ok() && signing_.enabled();
      if (!checked.ok()) refusals.push_back({kAllocationAnnotation, checked.message(), ""});
      Result<Allocation> parsed = ParseAllocation(text);
      if (parsed.ok()) {
        MarkSlotContainers(pod, dialects_, *parsed);
        allocation = std::move(*parsed);
      } else {
        problem = parsed.status().WithContext("pod " + key);
        log::Warn("ignoring the allocation of a pod", {{"pod", key}, {"error", problem.message()}});
      }
    }
  }
  std::optional<PodRequest> pending;
  std::string scheduler = StringAt(pod, "spec", "schedulerName");
  if (scheduler.empty()) scheduler = "default-scheduler";  // what the API server defaults it to
  if (!gone && node.empty()) {
    // Unbound pods are remembered even without a GPU request: bind must know that too.
    Result<PodRequest> request = ParsePod(pod, dialects_);
    if (request.ok()) pending = std::move(*request);
  }

  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.pods.find(key);
  if (it != shard.pods.end() && !id.uid.empty() && !it->second.uid.empty() &&
      it->second.uid != id.uid) {
    // Same name, another pod: the old one is gone.
    ReleaseLocked(it->second);
    shard.pods.erase(it);
    it = shard.pods.end();
  }
  if (gone || allocation) ClearNomination(key);
  if (gone) {
    if (it != shard.pods.end()) {
      ReleaseLocked(it->second);
      shard.pods.erase(it);
    }
    return problem;
  }
  if (it == shard.pods.end()) {
    if (!allocation && !pending) {  // nothing to remember about this pod
      Report(refusals, 0, nullptr);
      return problem;
    }
    it = shard.pods.emplace(key, PodRecord{}).first;
  }
  PodRecord& r = it->second;
  r.uid = id.uid;
  r.priority = IntAt(pod, "spec", "priority");
  r.may_preempt = StringAt(pod, "spec", "preemptionPolicy") != "Never";
  r.terminating = !StringAt(pod, "metadata", "deletionTimestamp").empty();
  // The decision that verified (or that a bind reserved) stands against a bound pod's annotations
  // that do not verify, rewritten or removed: only a user outside the webhook could make them.
  const bool keep = r.verified && r.allocation && !node.empty() && !verified;
  if (keep && Annotation(pod, kAllocationAnnotation).empty()) {
    refusals.push_back({kAllocationAnnotation,
                        "the " + std::string(kAllocationAnnotation) + " of " + what +
                            " was removed, which Tessera never does",
                        ""});
  }
  const char* action = keep         ? "ignored: the pod keeps the charge of its verified decision"
                       : allocation ? "charged as read: no verified decision of the pod is known "
                                      "(a scheduler restart after it was changed?)"
                                    : "not charged: it cannot be read";
  for (Refusal& refusal : refusals) {
    if (refusal.action.empty()) refusal.action = action;
  }
  if (refusals.empty()) {
    r.refused = 0;
  } else {
    Report(refusals, Fingerprint(pod, refusals), &r.refused);
  }
  if (keep) {
    r.reserved = false;
    r.pending.reset();
    return problem;
  }
  if (allocation && r.resized_from) {
    // An event from before the resize's patch keeps the resized charge; the patch's own event, or
    // any other decision, ends the resize.
    const bool stale = *allocation == *r.resized_from && r.node == node;
    if (!stale) r.resized_from.reset();
    if (stale) return problem;
  }
  if (allocation) {
    if (!(r.allocation && *r.allocation == *allocation && r.node == node)) {
      ReleaseLocked(r);
      r.charges = ChargesOf(*allocation);
      r.node = node;
      r.allocation = std::move(allocation);
      ApplyCharges(r.node, r.charges, +1);
    }
    r.verified = verified;
    r.reserved = false;
    r.pending.reset();
  } else if (!r.reserved) {
    // No (valid) decision on the pod and none in flight: it holds nothing.
    ReleaseLocked(r);
    r.pending = std::move(pending);
    r.scheduler = std::move(scheduler);
    if (!r.pending) shard.pods.erase(it);
  }
  return problem;
}

uint64_t ClusterState::PodEvents() const {
  std::lock_guard<std::mutex> lock(events_mu_);
  return pod_events_;
}

void ClusterState::WaitForPodEvent(uint64_t seen,
                                   std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(events_mu_);
  events_cv_.wait_until(lock, deadline, [&] { return pod_events_ > seen; });
}

Result<Allocation> ClusterState::Reserve(
    const PodId& pod, const std::string& node_name,
    const std::function<Result<Allocation>(std::span<const GpuSlot>)>& decide) {
  const std::string key = pod.Key();
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> pod_lock(shard.mu);
  auto it = shard.pods.find(key);
  if (it != shard.pods.end() && !it->second.charges.empty()) {
    return Status(StatusCode::kAlreadyExists,
                  "pod " + key + " already holds GPUs on node " + it->second.node);
  }
  NodeState* node = Find(node_name);
  if (!node) return NotFound("node " + node_name + " is not known to the Tessera scheduler");
  const int priority = it != shard.pods.end() ? it->second.priority : 0;
  Allocation allocation;
  std::vector<GpuCharge> charges;
  {
    std::lock_guard<std::mutex> node_lock(node->mu);
    if (!node->present) {
      return NotFound("node " + node_name +
                      " has no usable GPU inventory: " + node->inventory_error);
    }
    if (!node->serving) return Unavailable("node " + node_name + ": " + kNotServing);
    ASSIGN_OR_RETURN(allocation, decide(ViewFor(*node, {key, priority})));
    allocation.node = node_name;
    charges = ChargesOf(allocation);
    ApplyToNode(*node, charges, +1);
    std::erase_if(node->nominations, [&](const Nomination& n) { return n.pod == key; });
  }
  {
    std::lock_guard<std::mutex> lock(nominated_mu_);
    nominated_.erase(key);
  }
  PodRecord& r = shard.pods[key];
  r.uid = pod.uid;
  r.node = node_name;
  r.reserved = true;
  r.verified = signing_.enabled();
  r.allocation = allocation;
  r.charges = std::move(charges);
  return allocation;
}

Result<Allocation> ClusterState::Resize(
    const PodId& pod,
    const std::function<Result<Allocation>(const Allocation&, std::span<const GpuSlot>)>& decide) {
  const std::string key = pod.Key();
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> pod_lock(shard.mu);
  auto it = shard.pods.find(key);
  if (it == shard.pods.end() || !it->second.allocation || it->second.charges.empty() ||
      (!pod.uid.empty() && !it->second.uid.empty() && pod.uid != it->second.uid)) {
    return NotFound("pod " + key + " holds no GPUs of a Tessera decision");
  }
  PodRecord& r = it->second;
  if (r.reserved) return FailedPrecondition("pod " + key + " is being bound; try again");
  if (r.terminating) return FailedPrecondition("pod " + key + " is being deleted");
  if (signing_.enabled() && !r.verified) {
    return FailedPrecondition("the " + std::string(kAllocationAnnotation) + " of pod " + key +
                              " does not verify; a decision Tessera did not sign is not resized");
  }
  NodeState& node = FindOrAdd(r.node);
  Allocation previous = *r.allocation;
  {
    std::lock_guard<std::mutex> node_lock(node.mu);
    ASSIGN_OR_RETURN(Allocation resized, decide(previous, ViewFor(node, {key, r.priority})));
    resized.node = r.node;
    std::vector<GpuCharge> charges = ChargesOf(resized);
    ApplyToNode(node, r.charges, -1);
    ApplyToNode(node, charges, +1);
    r.charges = std::move(charges);
    r.allocation = std::move(resized);
  }
  r.verified = signing_.enabled();
  r.resized_from = previous;
  return previous;
}

void ClusterState::CancelResize(const PodId& pod, const Allocation& previous) {
  const std::string key = pod.Key();
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.pods.find(key);
  if (it == shard.pods.end() || !it->second.resized_from || *it->second.resized_from != previous) {
    return;
  }
  PodRecord& r = it->second;
  ApplyCharges(r.node, r.charges, -1);
  r.charges = ChargesOf(previous);
  r.allocation = previous;
  r.resized_from.reset();
  ApplyCharges(r.node, r.charges, +1);
}

void ClusterState::CancelReservation(const PodId& pod) {
  const std::string key = pod.Key();
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.pods.find(key);
  if (it == shard.pods.end() || !it->second.reserved) return;
  ReleaseLocked(it->second);
  if (!it->second.pending) shard.pods.erase(it);
}

std::optional<PodRequest> ClusterState::Pending(const PodId& pod) const {
  const std::string key = pod.Key();
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.pods.find(key);
  if (it == shard.pods.end()) return std::nullopt;
  if (!pod.uid.empty() && !it->second.uid.empty() && pod.uid != it->second.uid) {
    return std::nullopt;
  }
  return it->second.pending;
}

Result<PodRequest> ClusterState::Bindable(const PodId& pod, const std::string& scheduler,
                                          std::string* uid) const {
  const std::string key = pod.Key();
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.pods.find(key);
  if (it == shard.pods.end()) {
    return NotFound("pod " + key +
                    " is not an unbound pod the Tessera scheduler knows: its pod watch has not "
                    "shown it, or it is bound already or gone");
  }
  const PodRecord& r = it->second;
  if (!pod.uid.empty() && !r.uid.empty() && pod.uid != r.uid) {
    return FailedPrecondition("pod " + key + " has UID " + r.uid + ", not " + pod.uid +
                              " (the pod of that UID is gone)");
  }
  if (!r.charges.empty()) {
    return Status(StatusCode::kAlreadyExists,
                  "pod " + key + (r.reserved ? " is being bound to node " : " is bound to node ") +
                      r.node + " already");
  }
  if (!r.pending) return NotFound("pod " + key + " is not waiting for a node");
  if (!scheduler.empty() && r.scheduler != scheduler) {
    return FailedPrecondition("pod " + key + " has schedulerName \"" + r.scheduler +
                              "\"; the Tessera scheduler binds only pods of \"" + scheduler + "\"");
  }
  if (uid) *uid = r.uid;
  return *r.pending;
}

void ClusterState::ForgetPending(const PodId& pod) {
  const std::string key = pod.Key();
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.pods.find(key);
  if (it != shard.pods.end() && it->second.charges.empty()) shard.pods.erase(it);
}

std::optional<std::string> ClusterState::WhyNoNodeCouldFit(const PodRequest& request) const {
  if (request.empty()) return std::nullopt;
  const FitOptions options{.want_reason = true, .ignore_usage = true};
  FitScratch scratch;
  std::string largest, reason;
  uint64_t largest_mib = 0;
  std::shared_lock<std::shared_mutex> lock(nodes_mu_);
  for (const auto& [name, node] : nodes_) {
    std::lock_guard<std::mutex> node_lock(node->mu);
    if (!node->present) continue;
    FitOutput out;
    if (Fit(request, node->slots, options, scratch, &out)) return std::nullopt;
    uint64_t mib = 0;
    for (const GpuSlot& g : node->slots) mib += g.info.virtual_memory_mib();
    if (largest.empty() || mib > largest_mib || (mib == largest_mib && name < largest)) {
      largest = name;
      largest_mib = mib;
      reason = out.reason;
    }
  }
  if (largest.empty()) return std::nullopt;
  return "on node " + largest + " (the most GPU memory), even empty: " + reason;
}

int ClusterState::MaxGpusPerNode() const {
  std::shared_lock<std::shared_mutex> lock(nodes_mu_);
  int best = 0;
  for (const auto& [name, node] : nodes_) {
    std::lock_guard<std::mutex> node_lock(node->mu);
    if (!node->present) continue;
    int healthy = 0;
    for (const GpuSlot& s : node->slots) healthy += s.info.shareable();
    best = std::max(best, healthy);
  }
  return best;
}

size_t ClusterState::NodeCount() const {
  std::shared_lock<std::shared_mutex> lock(nodes_mu_);
  size_t count = 0;
  for (const auto& [name, node] : nodes_) {
    std::lock_guard<std::mutex> node_lock(node->mu);
    count += node->present;
  }
  return count;
}

std::span<const GpuSlot> ClusterState::ViewFor(const NodeState& node, const Claimant& who) {
  const auto now = std::chrono::steady_clock::now();
  auto applies = [&](const Nomination& n) {
    return n.pod != who.pod && n.priority >= who.priority && n.expires > now;
  };
  if (std::none_of(node.nominations.begin(), node.nominations.end(), applies)) {
    return node.slots;
  }
  thread_local NodeState view;
  view.slots = node.slots;
  view.orphans.clear();
  for (const Nomination& n : node.nominations) {
    if (applies(n)) ApplyToNode(view, n.charges, +1);
  }
  return view.slots;
}

std::optional<PendingPriority> ClusterState::PriorityOf(const PodId& pod) const {
  const std::string key = pod.Key();
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.pods.find(key);
  if (it == shard.pods.end() || !it->second.pending) return std::nullopt;
  return PendingPriority{it->second.priority, it->second.may_preempt};
}

std::unordered_map<std::string, std::vector<PodOnNode>> ClusterState::PodsOn(
    std::span<const std::string> nodes) const {
  std::unordered_set<std::string_view> wanted(nodes.begin(), nodes.end());
  std::unordered_map<std::string, std::vector<PodOnNode>> out;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (const auto& [key, r] : shard.pods) {
      if (r.charges.empty() || !wanted.count(r.node)) continue;
      size_t slash = key.find('/');
      out[r.node].push_back({{key.substr(0, slash), key.substr(slash + 1), r.uid},
                             r.priority,
                             r.terminating,
                             r.charges});
    }
  }
  return out;
}

std::vector<GpuSlot> ClusterState::GpusFor(const std::string& name, const Claimant& who) const {
  const NodeState* node = Find(name);
  if (!node) return {};
  return ReadFor(*node, who, [node](bool present, std::span<const GpuSlot> gpus) {
    return present && node->serving ? std::vector<GpuSlot>(gpus.begin(), gpus.end())
                                    : std::vector<GpuSlot>();
  });
}

Status ClusterState::Nominate(const PodId& pod, const std::string& node_name, int priority,
                              std::vector<GpuCharge> charges,
                              std::chrono::steady_clock::time_point expires) {
  const std::string key = pod.Key();
  NodeState* node = Find(node_name);
  if (!node) return NotFound("node " + node_name + " is not known to the Tessera scheduler");
  ClearNomination(key);
  {
    std::lock_guard<std::mutex> lock(node->mu);
    node->nominations.push_back({key, priority, std::move(charges), expires});
  }
  std::lock_guard<std::mutex> lock(nominated_mu_);
  nominated_[key] = node_name;
  return Status::Ok();
}

std::optional<std::string> ClusterState::NominatedNode(const PodId& pod) const {
  const std::string key = pod.Key();
  std::string name;
  {
    std::lock_guard<std::mutex> lock(nominated_mu_);
    auto it = nominated_.find(key);
    if (it == nominated_.end()) return std::nullopt;
    name = it->second;
  }
  const NodeState* node = Find(name);
  if (!node) return std::nullopt;
  std::lock_guard<std::mutex> lock(node->mu);
  const auto now = std::chrono::steady_clock::now();
  for (const Nomination& n : node->nominations) {
    if (n.pod == key && n.expires > now) return name;
  }
  return std::nullopt;
}

void ClusterState::ClearNomination(const std::string& pod_key) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(nominated_mu_);
    auto it = nominated_.find(pod_key);
    if (it == nominated_.end()) return;
    name = std::move(it->second);
    nominated_.erase(it);
  }
  NodeState* node = Find(name);
  if (!node) return;
  std::lock_guard<std::mutex> lock(node->mu);
  std::erase_if(node->nominations, [&](const Nomination& n) { return n.pod == pod_key; });
}

StateSnapshot ClusterState::Snapshot() const {
  StateSnapshot out;
  {
    std::shared_lock<std::shared_mutex> lock(nodes_mu_);
    for (const auto& [name, node] : nodes_) {
      std::lock_guard<std::mutex> node_lock(node->mu);
      if (!node->present && node->orphans.empty()) continue;
      out.nodes[name] = {node->present, node->serving, node->inventory_error, node->slots,
                         node->orphans};
    }
  }
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (const auto& [key, r] : shard.pods) {
      out.pods[key] = {r.uid, r.node, r.reserved, r.allocation, r.pending};
    }
  }
  return out;
}

}  // namespace tessera::scheduler
