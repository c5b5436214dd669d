// ObjectStore: the fake API server's in-memory objects, resourceVersions and watch history.
//
// Objects are JSON documents keyed by resource type, namespace and name. Every change takes the
// next value of one global counter as its resourceVersion and is recorded in a bounded history
// from which watches replay; a watch that needs a change no longer in the history gets 410.
// Namespaces "default" and "kube-system" exist from the start.
//
// Thread-safe: every method takes the store's mutex; watchers block in WaitForEvents.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fakeapiserver/api_error.h"
#include "fakeapiserver/resource_types.h"

namespace tessera::testing {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// One change, as watches see it. `previous` is the object before a MODIFIED change (for
// selector transitions), null otherwise.
struct WatchEvent {
  uint64_t rv = 0;
  std::string type;  // ADDED, MODIFIED, DELETED
  const ResourceType* resource = nullptr;
  ObjectPtr object;
  ObjectPtr previous;
};

struct ListPage {
  std::vector<ObjectPtr> items;
  uint64_t rv = 0;             // the list's resourceVersion
  std::string continue_token;  // empty on the last page
  int64_t remaining = 0;       // items after this page (when continue_token is set)
};

// What WaitForEvents returns: new events, or why the watch must end.
struct WatchBatch {
  enum class Outcome { kEvents, kTimeout, kExpired, kClosed, kStopped };
  Outcome outcome = Outcome::kTimeout;
  std::vector<WatchEvent> events;
  uint64_t current_rv = 0;  // the store's resourceVersion when the call returned
};

class ObjectStore {
 public:
  // `history` bounds the events kept for watch replay (at least 1).
  explicit ObjectStore(size_t history);

  // Stores a new object: fills uid, creationTimestamp, resourceVersion, generation and (when
  // metadata.generateName is set and the name is not) the name. The caller has validated kind and
  // name. 404 when the namespace does not exist, 409 AlreadyExists when the name is taken.
  ApiResult<ObjectPtr> Create(const ResourceType& type, const std::string& ns,
                              nlohmann::json object);

  ApiResult<ObjectPtr> Get(const ResourceType& type, const std::string& ns,
                           const std::string& name);

  // Objects of `type` in `ns` (all namespaces when empty) that `filter` accepts, sorted by
  // namespace and name. `limit` 0 means all; `continue_token` comes from a previous page (410 when
  // it is older than the history, 400 when malformed).
  ApiResult<ListPage> List(const ResourceType& type, const std::string& ns,
                           const std::function<bool(const nlohmann::json&)>& filter, int64_t limit,
                           const std::string& continue_token);

  // Replaces an object with what `mutate` makes of the current one, atomically. The result keeps
  // the identity fields (name, namespace, uid, creationTimestamp); if its
  // metadata.resourceVersion is set and differs from the current one, 409 Conflict. An unchanged
  // object keeps its resourceVersion and makes no event.
  using Mutation = std::function<ApiResult<nlohmann::json>(const nlohmann::json& current)>;
  ApiResult<ObjectPtr> Update(const ResourceType& type, const std::string& ns,
                              const std::string& name, const Mutation& mutate);

  // Deletes an object and returns it with the deletion's resourceVersion. `uid` and
  // `resource_version` (empty: no check) are preconditions: 409 Conflict when they differ.
  // Deleting a namespace deletes the objects in it.
  ApiResult<ObjectPtr> Delete(const ResourceType& type, const std::string& ns,
                              const std::string& name, const std::string& uid,
                              const std::string& resource_version);

  uint64_t CurrentRv();

  // 410 ApiError when a watch from `rv` would miss events no longer kept.
  std::optional<ApiError> CheckWatchable(uint64_t rv);

  // Blocks until there are events of `type` after `after_rv`, until `deadline`, until
  // CloseWatches/Stop, or until the events after `after_rv` are no longer kept (kExpired).
  // `generation` is the WatchGeneration() the watch started under.
  WatchBatch WaitForEvents(const ResourceType& type, uint64_t after_rv, uint64_t generation,
                           std::chrono::steady_clock::time_point deadline);
  uint64_t WatchGeneration();

  // Ends every open watch (kClosed); watches started afterwards are not affected.
  void CloseWatches();
  // Makes every resourceVersion before the current one too old for watches and continue tokens.
  void ExpireHistory();
  // Ends every watch for good (kStopped), for shutdown.
  void Stop();

 private:
  using Objects = std::map<std::string, ObjectPtr>;  // "namespace/name" -> object

  uint64_t NextRvLocked();
  void RecordLocked(WatchEvent event);
  ApiResult<ObjectPtr> DeleteLocked(const ResourceType& type, const std::string& key);

  const size_t history_limit_;

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<const ResourceType*, Objects> objects_;  // guarded by mu_
  std::deque<WatchEvent> history_;                  // guarded by mu_
  uint64_t rv_ = 0;                                 // guarded by mu_
  uint64_t compacted_rv_ = 0;      // guarded by mu_; events at or before it are gone
  uint64_t watch_generation_ = 0;  // guarded by mu_
  bool stopped_ = false;           // guarded by mu_
};

// "namespace/name" (or "name" for cluster-scoped objects): the store's key.
std::string ObjectKey(const std::string& ns, const std::string& name);

}  // namespace tessera::testing
