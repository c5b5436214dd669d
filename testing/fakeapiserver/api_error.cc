#include "fakeapiserver/api_error.h"

namespace tessera::testing {

using nlohmann::json;

json ApiError::ToStatusJson() const {
  json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason},
                 {"code", code}};
  if (!details.is_null()) status["details"] = details;
  return status;
}

ApiError BadRequest(std::string message) {
  return {400, "BadRequest", std::move(message)};
}

ApiError NotFoundError(const std::string& resource, const std::string& name) {
  return {404,
          "NotFound",
          resource + " \"" + name + "\" not found",
          {{"name", name}, {"kind", resource}}};
}

ApiError AlreadyExistsError(const std::string& resource, const std::string& name) {
  return {409,
          "AlreadyExists",
          resource + " \"" + name + "\" already exists",
          {{"name", name}, {"kind", resource}}};
}

ApiError ConflictError(const std::string& resource, const std::string& name, std::string why) {
  return {409,
          "Conflict",
          "Operation cannot be fulfilled on " + resource + " \"" + name + "\": " + why,
          {{"name", name}, {"kind", resource}}};
}

ApiError InvalidError(const std::string& kind, const std::string& name, const std::string& field,
                      const std::string& cause_reason, const std::string& detail) {
  json cause = {{"reason", cause_reason}, {"message", detail}, {"field", field}};
  return {422,
          "Invalid",
          kind + " \"" + name + "\" is invalid: " + field + ": " + detail,
          {{"name", name}, {"kind", kind}, {"causes", json::array({cause})}}};
}

ApiError MethodNotAllowedError() {
  return {405, "MethodNotAllowed",
          "the server does not allow this method on the requested resource"};
}

ApiError ExpiredError(std::string message) {
  return {410, "Expired", std::move(message)};
}

ApiError UnsupportedMediaTypeError(const std::string& content_type) {
  return {415, "UnsupportedMediaType",
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json-patch+json, application/merge-patch+json, "
          "application/strategic-merge-patch+json (got \"" +
              content_type + "\")"};
}

ApiError ErrorForCode(int code, std::string message) {
  const char* reason = "InternalError";
  switch (code) {
    case 400:
      reason = "BadRequest";
      break;
    case 401:
      reason = "Unauthorized";
      break;
    case 403:
      reason = "Forbidden";
      break;
    case 404:
      reason = "NotFound";
      break;
    case 405:
      reason = "MethodNotAllowed";
      break;
    case 409:
      reason = "Conflict";
      break;
    case 410:
      reason = "Expired";
      break;
    case 422:
      reason = "Invalid";
      break;
    case 429:
      reason = "TooManyRequests";
      break;
    case 503:
      reason = "ServiceUnavailable";
      break;
    case 504:
      reason = "Timeout";
      break;
    default:
      break;
  }
  return {code, reason, std::move(message)};
}

}  // namespace tessera::testing
