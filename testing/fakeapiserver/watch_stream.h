// WatchStream: one open watch, producing the newline-separated JSON events of a chunked watch
// response.
//
// Built by the API handler once the request is validated; the HTTP layer then calls Next()
// repeatedly from its connection thread, and each call blocks (at most until the next bookmark or
// the timeout) and returns the lines to send. Events of objects that stop matching the selectors
// arrive as DELETED, objects that start matching as ADDED, as on the real server. Not
// thread-safe: one stream belongs to one connection thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "fakeapiserver/object_store.h"
#include "fakeapiserver/selectors.h"

namespace tessera::testing {

struct WatchOptions {
  const ResourceType* type = nullptr;
  std::string ns;  // empty: all namespaces
  FieldSelector fields;
  LabelSelector labels;
  uint64_t after_rv = 0;           // send the changes after this resourceVersion
  std::vector<ObjectPtr> initial;  // sent first as ADDED (watch without a resourceVersion)
  bool bookmarks = false;
  std::chrono::milliseconds bookmark_interval{1000};
  std::chrono::steady_clock::time_point deadline;  // timeoutSeconds; time_point::max() for none
  bool as_table = false;                           // objects rendered as meta.k8s.io Tables
  std::string include_object;  // Table row objects: "Object", "None" or metadata only
};

class WatchStream {
 public:
  WatchStream(ObjectStore& store, WatchOptions options);

  // The next lines to write (each ends in '\n'); `done` is set when the stream must end after
  // them (timeout, closed by fault injection, expired history: an ERROR event, or shutdown).
  std::string Next(bool* done);

 private:
  std::string EventLine(const std::string& type, const ObjectPtr& object) const;
  bool Matches(const nlohmann::json& object) const;

  ObjectStore& store_;
  WatchOptions options_;
  uint64_t generation_;
  std::chrono::steady_clock::time_point next_bookmark_;
  bool initial_sent_ = false;
};

}  // namespace tessera::testing
