#include "kube/api_error.h"

#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace tessera::kube {

namespace {
constexpr std::string_view kHttpMarker = ": HTTP ";
}  // namespace

StatusCode CodeForHttpStatus(int http_status, std::string_view reason) {
  switch (http_status) {
    case 400:
    case 422:
      return StatusCode::kInvalidArgument;
    case 401:
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 408:
    case 504:
      return StatusCode::kDeadlineExceeded;
    case 409:
      return reason == "AlreadyExists" ? StatusCode::kAlreadyExists : StatusCode::kConflict;
    case 410:
      return StatusCode::kFailedPrecondition;
    case 429:
      return StatusCode::kResourceExhausted;
    default:
      break;
  }
  if (http_status >= 500 || http_status == 0) return StatusCode::kUnavailable;
  return StatusCode::kInternal;  // an unexpected 1xx/3xx/4xx answer
}

Status ApiError::ToStatus(std::string_view context) const {
  std::string text(context);
  if (http_status != 0) {
    text += std::string(kHttpMarker) + std::to_string(http_status);
    if (!reason.empty()) text += " " + reason;
  }
  text += ": ";
  text += message.empty() ? "no message" : message;
  return Status(CodeForHttpStatus(http_status, reason), std::move(text));
}

ApiError ApiErrorFromResponse(int http_status, std::string_view body) {
  ApiError error{.http_status = http_status};
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status") {
    if (parsed.contains("reason") && parsed["reason"].is_string()) error.reason = parsed["reason"];
    if (parsed.contains("message") && parsed["message"].is_string()) {
      error.message = parsed["message"];
    }
  }
  if (error.message.empty()) {
    std::string_view trimmed = Trim(body);
    error.message = std::string(trimmed.substr(0, 200));
    if (error.message.empty()) error.message = "HTTP " + std::to_string(http_status);
  }
  return error;
}

ApiError ErrorDetails(const Status& status) {
  const std::string& text = status.message();
  ApiError none{.message = text};
  size_t at = text.find(kHttpMarker);
  if (at == std::string::npos) return none;
  size_t pos = at + kHttpMarker.size();
  int code = 0;
  size_t digits = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && digits < 3) {
    code = code * 10 + (text[pos++] - '0');
    ++digits;
  }
  if (digits != 3) return none;
  ApiError error{.http_status = code};
  if (pos < text.size() && text[pos] == ' ') {
    size_t end = text.find(": ", pos);
    if (end == std::string::npos) return none;
    error.reason = text.substr(pos + 1, end - pos - 1);
    pos = end;
  }
  if (text.compare(pos, 2, ": ") != 0) return none;
  error.message = text.substr(pos + 2);
  return error;
}

bool IsGone(const Status& status) {
  ApiError details = ErrorDetails(status);
  return details.http_status == 410;
}

}  // namespace tessera::kube
