// Resizer: the leading scheduler's answers to resize requests (docs/resize.md). A pod whose
// `tessera.io/resize` names an id that its `tessera.io/resize-status` does not is waiting for an
// answer; the Resizer decides it (ResizeDecision against the node's GPUs through
// ClusterState::Resize, then the namespace's quota), and writes the answer in one patch
// conditional on the pod's resourceVersion: granted, the new `tessera.io/allocation` (signed)
// with the status; refused, the status alone. Each answer gets an Event on the pod, named after
// the request, so that a replica that takes over re-creates a missing one (for answers of the
// last kEventWindow; Kubernetes keeps Events an hour by default). A patch that
// loses a race (Conflict) is undone and the request decided again from the pod as the API has it
// then (read again, a few times at most) or from its next event, so nothing is applied twice and
// nothing is lost across restarts and leader changes. A queued pod is never replaced by an older
// copy (a LIST made when leading starts can be older than the events queued already).
// Thread-safe; OnPod may be called from the watch thread, Process from any one.
//
//   Resizer resizer(state, &ledger, writer, &leadership);
//   resizer.Start();                        // its worker thread
//   resizer.OnPod(EventType::kModified, pod);
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scheduler/cluster_state.h"
#include "scheduler/leadership.h"
#include "scheduler/quota_ledger.h"
#include "scheduler/resize.h"

namespace tessera::scheduler {

// The API writes of the Resizer (the app's over the Kubernetes client; a fake in tests).
class ResizeWriter {
 public:
  virtual ~ResizeWriter() = default;
  // Merge-patches the pod's annotations while its metadata.resourceVersion is `resource_version`:
  // the patched pod, or kConflict when it has changed since (any other error as the API gives it).
  virtual Result<nlohmann::json> PatchPod(const PodId& pod,
                                          const std::map<std::string, std::string>& annotations,
                                          const std::string& resource_version) = 0;
  // The pod as the API has it now (its answer lost a race: the next try starts from this copy).
  virtual Result<nlohmann::json> GetPod(const PodId& pod) = 0;
  // Creates the Event `name` about `pod`; OK when one of that name exists already.
  virtual Status RecordEvent(const nlohmann::json& pod, const std::string& name,
                             const std::string& type, const std::string& reason,
                             const std::string& message) = 0;
};

// How many times the worker reads a pod again after its answer lost a race, before it waits for
// the pod's next event.
inline constexpr int kConflictRereads = 3;

// How old an answer may be for a replica that takes over to make its Event when it is missing.
inline constexpr int64_t kEventWindowSeconds = 30 * 60;

// Event reasons.
inline constexpr char kResizedReason[] = "Resized";
inline constexpr char kResizeRefusedReason[] = "ResizeRefused";

class Resizer {
 public:
  // `quotas` and `leadership` may be null (no quotas; always leading); all must outlive it.
  Resizer(ClusterState& state, QuotaLedger* quotas, ResizeWriter& writer,
          const Leadership* leadership);
  ~Resizer();  // Stop()

  void Start();
  void Stop();

  // A pod event, after the state and the ledger have seen it: queues the pod for the worker when
  // this replica leads and the pod waits for an answer, or its answer's Event was not made here.
  void OnPod(EventType type, const nlohmann::json& pod);

  // Answers the pod's pending request, or makes its answer's Event, on the caller's thread. The
  // outcome: OK when there was nothing to do or it was done; the patch's error otherwise (then the
  // next event of the pod tries again).
  Status Process(const nlohmann::json& pod);

  // The Event name of request `id` of pod `name`: "<name>.tessera-resize-<hash of id>".
  static std::string EventName(const std::string& name, const std::string& id);

 private:
  enum class Work { kNone, kAnswer, kEvent };
  // What `pod` needs; `request`/`status` are filled when present and readable.
  Work Needs(const nlohmann::json& pod, std::optional<ResizeRequest>& request,
             std::optional<ResizeStatus>& status, std::string& malformed) const;
  Status Answer(const nlohmann::json& pod, const PodId& id, const std::string& request_text,
                const std::optional<ResizeRequest>& request, const std::string& malformed);
  void RecordAnswer(const nlohmann::json& pod, const ResizeStatus& status);
  void Run();

  ClusterState& state_;
  QuotaLedger* const quotas_;
  ResizeWriter& writer_;
  const Leadership* const leadership_;

  std::mutex mu_;
  std::condition_variable cv_;
  // Protected by mu_:
  std::map<std::string, nlohmann::json> queued_;  // the latest event of each pod, by ns/name
  std::map<std::string, std::string> evented_;    // the request id whose Event is made, by ns/name
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tessera::scheduler
