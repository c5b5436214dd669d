#include "fakeapiserver/watch_stream.h"

#include <algorithm>

#include "fakeapiserver/table.h"

namespace tessera::testing {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

WatchStream::WatchStream(ObjectStore& store, WatchOptions options)
    : store_(store),
      options_(std::move(options)),
      generation_(store.WatchGeneration()),
      next_bookmark_(Clock::now() + options_.bookmark_interval) {}

bool WatchStream::Matches(const json& object) const {
  if (!options_.ns.empty() && object["metadata"].value("namespace", "") != options_.ns) {
    return false;
  }
  return options_.fields.Matches(object) && options_.labels.Matches(object);
}

std::string WatchStream::EventLine(const std::string& type, const ObjectPtr& object) const {
  json event = {{"type", type}};
  if (options_.as_table) {
    event["object"] =
        RenderTable(*options_.type, {object}, (*object)["metadata"].value("resourceVersion", ""),
                    options_.include_object);
  } else {
    event["object"] = *object;
  }
  return event.dump() + "\n";
}

std::string WatchStream::Next(bool* done) {
  *done = false;
  std::string out;
  if (!initial_sent_) {
    initial_sent_ = true;
    for (const ObjectPtr& o : options_.initial) out += EventLine("ADDED", o);
    if (!out.empty()) return out;
  }
  Clock::time_point wait_until = options_.deadline;
  if (options_.bookmarks) wait_until = std::min(wait_until, next_bookmark_);
  WatchBatch batch =
      store_.WaitForEvents(*options_.type, options_.after_rv, generation_, wait_until);
  switch (batch.outcome) {
    case WatchBatch::Outcome::kStopped:
    case WatchBatch::Outcome::kClosed:
      *done = true;
      return out;
    case WatchBatch::Outcome::kExpired: {
      ApiError gone = ExpiredError("The resourceVersion for the provided watch is too old.");
      json event = {{"type", "ERROR"}, {"object", gone.ToStatusJson()}};
      *done = true;
      return event.dump() + "\n";
    }
    case WatchBatch::Outcome::kEvents:
      for (const WatchEvent& e : batch.events) {
        bool now = Matches(*e.object);
        bool before = e.previous ? Matches(*e.previous) : now;
        if (e.type == "MODIFIED" && now && !before) {
          out += EventLine("ADDED", e.object);
        } else if (e.type == "MODIFIED" && !now && before) {
          out += EventLine("DELETED", e.object);
        } else if (now) {
          out += EventLine(e.type, e.object);
        }
      }
      break;
    case WatchBatch::Outcome::kTimeout:
      break;
  }
  options_.after_rv = batch.current_rv;
  Clock::time_point now = Clock::now();
  if (options_.bookmarks && now >= next_bookmark_) {
    json bookmark = {{"type", "BOOKMARK"},
                     {"object",
                      {{"kind", options_.type->kind},
                       {"apiVersion", options_.type->ApiVersion()},
                       {"metadata", {{"resourceVersion", std::to_string(options_.after_rv)}}}}}};
    out += bookmark.dump() + "\n";
    next_bookmark_ = now + options_.bookmark_interval;
  }
  if (now >= options_.deadline) *done = true;
  return out;
}

}  // namespace tessera::testing
