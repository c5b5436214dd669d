// WatchEvent: one line of a watch stream, parsed.
//
// The server sends one JSON object per line: {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR",
// "object":{...}}. An ERROR event carries a `Status` object; ErrorStatusOf turns it into the same
// Status a failed call would give (an expired resourceVersion reads IsGone()). Pure: thread-safe.
#pragma once

#include <string_view>

#include "common/status.h"
#include "kube/objects.h"

namespace tessera::kube {

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  Json object;
};

const char* WatchEventTypeName(WatchEvent::Type type);

// Parses one line. InvalidArgument for bad JSON, an unknown type or a missing object.
Result<WatchEvent> ParseWatchEvent(std::string_view line);

// The Status an ERROR event reports, with `context` naming the watch.
Status ErrorStatusOf(const WatchEvent& event, std::string_view context);

}  // namespace tessera::kube
