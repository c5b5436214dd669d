// ApiError: what the Kubernetes API server said when a call failed, and its mapping onto Status.
// A failed call of the kube client returns a tessera::Status whose code says what a caller can do
// about it; when the server answered, the message reads "<call>: HTTP <code> <Reason>: <server
// message>". Codes:
//   404             -> kNotFound            409 reason Conflict  -> kConflict (re-read, retry)
//   409 AlreadyExists -> kAlreadyExists     400, 422             -> kInvalidArgument
//   401, 403        -> kPermissionDenied    410 (Expired, Gone)  -> kFailedPrecondition
//   429             -> kResourceExhausted   504, 408             -> kDeadlineExceeded
//   other 5xx and network errors          -> kUnavailable
// ErrorDetails() reads the HTTP code, reason and message back, so the Status stays the one error
// value that flows through RETURN_IF_ERROR. Plain values: thread-compatible.
//
//   if (ErrorDetails(status).http_status == 409) { /* re-read the object and try again */ }
//
// An example message: docs/kube-client.md, "Calls and errors".
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace tessera::kube {

struct ApiError {
  int http_status = 0;  // 0 when the server never answered (network error)
  std::string reason;   // the API Status' reason ("NotFound", "Conflict", "Expired"...), may be ""
  std::string message;  // the API Status' message, or the body/transport error text

  // The Status for this error; `context` names the call ("GET /api/v1/nodes/n1").
  Status ToStatus(std::string_view context) const;
};

// Builds the ApiError from a non-2xx response: the body is parsed as a `Status` object when it is
// one, otherwise its first 200 bytes become the message.
ApiError ApiErrorFromResponse(int http_status, std::string_view body);

// The StatusCode for an HTTP status and API reason (see the table above).
StatusCode CodeForHttpStatus(int http_status, std::string_view reason);

// The details a Status made by ApiError::ToStatus carries; http_status 0 and the whole message
// for any other Status.
ApiError ErrorDetails(const Status& status);

// True when `status` is the server's 410 Gone / Expired (a watch or continue token too old).
bool IsGone(const Status& status);

}  // namespace tessera::kube
