// FilterMemory: the last filter answer for each pod that waits for a node, so that /inspect (and
// the web page) can say why a pod is pending, in the words of the filter's reasons.
//
// Bounded, and never grown by what a client sends: an answer is kept only for a pod that the pod
// watch shows unbound (ClusterState::Pending), at most `max_pods` of them (the oldest answer goes
// first), with at most kMaxListed nodes that fit and kMaxListed refusals each (the rest counted):
// with the default bound about 16 MB for 30-character node names and 150-character reasons, 40 MB
// for the longest node names (docs/scheduler.md). A record is dropped when the pod watch shows the
// pod bound, finished or deleted, or recreated under its name. Thread-safe: one mutex, held only to
// find, insert or erase a record or to copy the pointers to them (All copies the records outside
// it); nothing is called while it is held.
//
//   FilterMemory memory(state);
//   memory.Record(pod, engine.Filter(pod, request, names));   // after each filter
//   memory.OnPod(EventType::kModified, pod_json);              // from the pod informer
//   std::map<std::string, FilterRecord> last = memory.All();   // for /inspect
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/cluster_state.h"
#include "scheduler/engine.h"

namespace tessera::scheduler {

struct FilterRecord {
  struct Refusal {
    std::string node;
    std::string reason;
    bool unresolvable = false;  // could not fit there even with the node empty
    bool operator==(const Refusal&) const = default;
  };
  std::string uid;  // the pod's, as the filter request gave it (may be empty)
  std::chrono::system_clock::time_point time;
  size_t nodes_checked = 0;
  std::vector<std::string> fits;  // by node name, at most kMaxListed
  size_t fits_left_out = 0;
  std::vector<Refusal> reasons;  // by node name, at most kMaxListed
  size_t reasons_left_out = 0;
  bool operator==(const FilterRecord&) const = default;
};

class FilterMemory {
 public:
  static constexpr size_t kMaxListed = 20;
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  explicit FilterMemory(const ClusterState& state, size_t max_pods = 2000,
                        Clock now = std::chrono::system_clock::now);

  // Keeps `result` as the last filter of `pod` when the pod watch shows it waiting for a node;
  // otherwise does nothing. Replaces the pod's earlier record. The watch is asked again after
  // the record is kept, so a bind or delete that the watch shows meanwhile leaves no record.
  void Record(const PodId& pod, const FilterResult& result);
  // A pod watch event: drops the record of a pod that is bound, Succeeded, Failed or deleted, or
  // whose UID differs from the recorded one.
  void OnPod(EventType type, const nlohmann::json& pod);

  // A copy of every record, by namespace/name.
  std::map<std::string, FilterRecord> All() const;
  size_t size() const;

 private:
  const ClusterState& state_;
  const size_t max_pods_;
  const Clock now_;
  mutable std::mutex mu_;
  // By namespace/name; guarded by mu_. Records are never changed once kept (a new filter
  // replaces the pointer), so All copies them after letting go of mu_.
  std::map<std::string, std::shared_ptr<const FilterRecord>> records_;
};

}  // namespace tessera::scheduler
