// The resize protocol (docs/resize.md): a user asks for a new size of one running container in
// the pod annotation `tessera.io/resize`, and the scheduler answers in `tessera.io/resize-status`
// (granted with the new `tessera.io/allocation`, or refused with the reason).
//
//   tessera.io/resize:        {"version":1,"id":"4f1c0a9e2b7d6c35","container":"main",
//                              "memoryMiB":8192,"cores":40}
//   tessera.io/resize-status: {"version":1,"id":"4f1c0a9e2b7d6c35","container":"main",
//                              "granted":true,"memoryMiB":8192,"cores":40,
//                              "message":"...","time":"2026-12-06T05:00:00Z"}
//
// A request is answered once: it is pending while the status names another id (or there is
// none), so a restarted or newly elected scheduler answers exactly the requests not answered yet.
// Plain values and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tessera::annotations {

// The longest request id; ids are chosen by the requester (kubectl tessera resize: 16 hex digits).
inline constexpr size_t kMaxResizeIdLength = 63;
// The most memory per GPU a request may ask (16 TiB, the bound quotas use): larger values would
// overflow the sums and the byte limits the scheduler and the node agent compute from it.
inline constexpr uint64_t kMaxResizeMemoryMiB = uint64_t{1} << 24;

struct ResizeRequest {
  std::string id;                      // names this request; a new request needs a new id
  std::string container;               // an app container of the pod that holds GPUs
  std::optional<uint64_t> memory_mib;  // per GPU, at least 1; absent = unchanged
  std::optional<int> cores;            // percent per GPU, 1..100; absent = unchanged
  bool operator==(const ResizeRequest&) const = default;
};

struct ResizeStatus {
  std::string id;  // the request answered
  std::string container;
  bool granted = false;
  uint64_t memory_mib = 0;  // the container's size per GPU after the answer
  int cores = 0;
  std::string message;  // what changed, or why not
  std::string time;     // RFC 3339, when it was answered
  bool operator==(const ResizeStatus&) const = default;
};

std::string ResizeRequestToJson(const ResizeRequest& request);
// Errors begin with the annotation's name and say what is allowed: version other than 1, no id or
// one longer than kMaxResizeIdLength, no container, neither memoryMiB nor cores, memoryMiB 0,
// cores outside 1..100.
Result<ResizeRequest> ParseResizeRequest(std::string_view text);

std::string ResizeStatusToJson(const ResizeStatus& status);
Result<ResizeStatus> ParseResizeStatus(std::string_view text);

}  // namespace tessera::annotations
