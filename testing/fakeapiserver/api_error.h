// ApiError and ApiResult<T>: the fake API server's errors, shaped like the real server's `Status`.
//
// An ApiError carries the HTTP code, the Status `reason` (NotFound, Conflict, Invalid...), the
// message and the optional `details` object; ToStatusJson() renders the meta/v1 Status body the
// real kube-apiserver sends. ApiResult<T> holds a T or an ApiError. Plain values:
// thread-compatible.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

namespace tessera::testing {

struct ApiError {
  int code = 500;
  std::string reason;                // "NotFound", "AlreadyExists", "Conflict", "Invalid", ...
  std::string message;               // human-readable, as the real server words it
  nlohmann::json details = nullptr;  // {"name","group","kind","causes":[...]} or null

  nlohmann::json ToStatusJson() const;
};

// The real server's errors. `resource` is the plural name ("pods"), `kind` the Kind ("Pod").
ApiError BadRequest(std::string message);
ApiError NotFoundError(const std::string& resource, const std::string& name);
ApiError AlreadyExistsError(const std::string& resource, const std::string& name);
ApiError ConflictError(const std::string& resource, const std::string& name, std::string why);
// 422: `field` is the path ("metadata.name"), `cause_reason` FieldValueRequired/FieldValueInvalid.
ApiError InvalidError(const std::string& kind, const std::string& name, const std::string& field,
                      const std::string& cause_reason, const std::string& detail);
ApiError MethodNotAllowedError();
ApiError ExpiredError(std::string message);
ApiError UnsupportedMediaTypeError(const std::string& content_type);
// Any status code, with the reason the real server uses for it (used by fault injection).
ApiError ErrorForCode(int code, std::string message);

template <typename T>
class ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const ApiError& error() const { return std::get<ApiError>(v_); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace tessera::testing
