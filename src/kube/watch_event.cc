#include "kube/watch_event.h"

#include "kube/api_error.h"

namespace tessera::kube {

const char* WatchEventTypeName(WatchEvent::Type type) {
  switch (type) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
    case WatchEvent::Type::kBookmark:
      return "BOOKMARK";
    case WatchEvent::Type::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

Result<WatchEvent> ParseWatchEvent(std::string_view line) {
  Json parsed = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  auto shown = [&] { return std::string(line.substr(0, 120)); };
  if (!parsed.is_object()) return InvalidArgument("watch event is not a JSON object: " + shown());
  auto type = parsed.find("type");
  auto object = parsed.find("object");
  if (type == parsed.end() || !type->is_string()) {
    return InvalidArgument("watch event has no type: " + shown());
  }
  if (object == parsed.end() || !object->is_object()) {
    return InvalidArgument("watch event has no object: " + shown());
  }
  WatchEvent event;
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ADDED")
    event.type = WatchEvent::Type::kAdded;
  else if (name == "MODIFIED")
    event.type = WatchEvent::Type::kModified;
  else if (name == "DELETED")
    event.type = WatchEvent::Type::kDeleted;
  else if (name == "BOOKMARK")
    event.type = WatchEvent::Type::kBookmark;
  else if (name == "ERROR")
    event.type = WatchEvent::Type::kError;
  else
    return InvalidArgument("watch event type \"" + name +
                           "\" is not ADDED, MODIFIED, DELETED, BOOKMARK or ERROR");
  event.object = std::move(*object);
  return event;
}

Status ErrorStatusOf(const WatchEvent& event, std::string_view context) {
  const Json& status = event.object;
  ApiError error;
  if (status.contains("code") && status["code"].is_number_integer()) {
    error.http_status = status["code"].get<int>();
  }
  if (status.contains("reason") && status["reason"].is_string()) error.reason = status["reason"];
  if (status.contains("message") && status["message"].is_string()) {
    error.message = status["message"];
  }
  if (error.http_status == 0) error.http_status = 500;  // an ERROR event without a code
  return error.ToStatus(std::string(context) + " (watch ERROR event)");
}

}  // namespace tessera::kube
