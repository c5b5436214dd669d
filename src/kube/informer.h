// Informer: a local, always-current copy of one kind of API object, fed by LIST then WATCH.
//
// Start() runs a background thread: it LISTs (all pages), fills the cache, reports synced, then
// WATCHes with bookmarks, resuming from the last version seen whenever the watch ends (with
// backoff). When the version is too old (410) it LISTs again and reconciles: vanished objects get
// on_delete, changed ones on_update, new ones on_add, so no transition is missed across a re-list.
// Handlers run on the informer's thread, one at a time, in event order, after the cache has been
// changed (Get() in a handler sees the new state); they must not call Stop(). Get/List/
// HasSynced/WaitForSync are thread-safe. Stop() (or the destructor) ends the thread promptly.
//
//   Informer pods(*client, kPods, {.selectors = {.field_selector = "spec.nodeName=n1"}},
//                 {.on_add = [](const Json& p) { ... }});
//   pods.Start();
//   if (!pods.WaitForSync(std::chrono::seconds(30))) return Unavailable("pods not synced");
//
// Backoff and the 410 cases: docs/kube-client.md, "Informer semantics".
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kube/backoff.h"
#include "kube/cancel_token.h"
#include "kube/client.h"
#include "kube/lister_watcher.h"
#include "kube/objects.h"
#include "kube/resource.h"

namespace tessera::kube {

struct InformerOptions {
  std::string name = "informer";  // for logs: "pods of node n1"
  SelectorOptions selectors{};    // what to list and watch
  Backoff::Options backoff{};     // between failed attempts
};

struct InformerHandlers {
  std::function<void(const Json& object)> on_add;
  std::function<void(const Json& old_object, const Json& new_object)> on_update;
  std::function<void(const Json& last_known)> on_delete;
};

class Informer {
 public:
  // Lists and watches `resource` through `client`, which must outlive the informer.
  Informer(Client& client, const Resource& resource, InformerOptions options,
           InformerHandlers handlers);
  // Lists and watches through `source` (tests script one).
  Informer(std::unique_ptr<ListerWatcher> source, InformerOptions options,
           InformerHandlers handlers);
  ~Informer();  // Stop()
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Starts the background thread. Call once.
  void Start();
  // Ends the thread (cancelling a watch or list in flight) and waits for it. Idempotent.
  void Stop();

  // True once the first LIST has been loaded into the cache.
  bool HasSynced() const;
  // Waits until synced; false when `timeout` passed or the informer was stopped first.
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  // The cached object with key "namespace/name" ("name" for cluster-scoped), if any.
  std::optional<Json> Get(const std::string& key) const;
  std::vector<Json> List() const;
  // The resourceVersion the next watch resumes from.
  std::string LastResourceVersion() const;
  // How many LISTs have been done (1 after the first sync; more after 410s).
  int ListCount() const;

 private:
  struct Change {
    enum class Kind { kAdd, kUpdate, kDelete } kind;
    Json old_object;
    Json new_object;
  };

  void Run();
  // One LIST and reconciliation with the cache. Returns the list's Status.
  Status Relist();
  // One watch from the last resourceVersion; returns how it ended and whether events arrived.
  Status WatchOnce(bool& got_events);
  void Upsert(const Json& object);
  void Remove(const Json& object);
  void Deliver(const Change& change);
  // Waits `delay` unless stopped first; returns false when stopped.
  bool Pause(std::chrono::milliseconds delay);

  const std::unique_ptr<ListerWatcher> source_;
  const InformerOptions options_;
  const InformerHandlers handlers_;

  std::thread thread_;
  CancelToken cancel_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;  // signalled on sync and on stop
  std::map<std::string, Json> cache_;        // guarded by mutex_
  std::string resource_version_;             // guarded by mutex_
  bool synced_ = false;                      // guarded by mutex_
  int list_count_ = 0;                       // guarded by mutex_
};

}  // namespace tessera::kube
