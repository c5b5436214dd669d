// Status and Result<T>: errors as values.
//
// A Status is either OK or a code with a message that says what went wrong in words a user can act
// on. Result<T> holds a T or a non-OK Status. Neither throws. Thread-compatible (plain values).
//
//   Result<int> r = ParseCount(text);
//   if (!r.ok()) return r.status();
//   use(*r);
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tessera {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from a user, a file or a peer
  kNotFound,
  kAlreadyExists,
  kConflict,           // optimistic-concurrency precondition failed; retry after re-reading
  kResourceExhausted,  // does not fit / over a limit
  kFailedPrecondition,
  kUnavailable,  // peer or network failure; retry may help
  kDeadlineExceeded,
  kPermissionDenied,
  kInternal,  // a state that should not happen
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "InvalidArgument: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status Conflict(std::string m) {
  return {StatusCode::kConflict, std::move(m)};
}
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status Internal(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}

// Turns errno into a Status naming the operation and the path.
Status ErrnoStatus(const std::string& operation, const std::string& path, int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result needs a value or an error");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tessera

#define TESSERA_CONCAT_INNER(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)           \
  do {                                  \
    ::tessera::Status status_ = (expr); \
    if (!status_.ok()) return status_;  \
  } while (0)

// ASSIGN_OR_RETURN(auto x, MakeX()): binds the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(TESSERA_CONCAT(result_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
