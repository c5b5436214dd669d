#include "common/status.h"

#include <cerrno>
#include <cstring>

namespace tessera {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

Status ErrnoStatus(const std::string& operation, const std::string& path, int err) {
  StatusCode code = StatusCode::kInternal;
  if (err == ENOENT) code = StatusCode::kNotFound;
  if (err == EACCES || err == EPERM) code = StatusCode::kPermissionDenied;
  if (err == EEXIST) code = StatusCode::kAlreadyExists;
  return Status(code, operation + " " + path + ": " + std::strerror(err));
}

}  // namespace tessera
