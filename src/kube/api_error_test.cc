#include "kube/api_error.h"

#include <gtest/gtest.h>

namespace tessera::kube {
namespace {

TEST(ApiErrorTest, ParsesStatusBodyAndMapsConflict) {
  std::string body = R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"Operation cannot be fulfilled on pods \"p1\": the object has been modified",
    "reason":"Conflict","code":409})";
  ApiError error = ApiErrorFromResponse(409, body);
  EXPECT_EQ(error.http_status, 409);
  EXPECT_EQ(error.reason, "Conflict");
  EXPECT_EQ(error.message,
            "Operation cannot be fulfilled on pods \"p1\": the object has been modified");
  Status status = error.ToStatus("PATCH /api/v1/namespaces/default/pods/p1");
  EXPECT_EQ(status.code(), StatusCode::kConflict);
  EXPECT_EQ(status.message(),
            "PATCH /api/v1/namespaces/default/pods/p1: HTTP 409 Conflict: Operation cannot be "
            "fulfilled on pods \"p1\": the object has been modified");
}

TEST(ApiErrorTest, DetailsRoundTripThroughStatusEvenWithContextAdded) {
  ApiError error{.http_status = 404, .reason = "NotFound", .message = "pods \"x\" not found"};
  Status status = error.ToStatus("GET /api/v1/namespaces/d/pods/x").WithContext("binding pod");
  ApiError back = ErrorDetails(status);
  EXPECT_EQ(back.http_status, 404);
  EXPECT_EQ(back.reason, "NotFound");
  EXPECT_EQ(back.message, "pods \"x\" not found");
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
}

TEST(ApiErrorTest, DetailsOfAnErrorWithoutReason) {
  ApiError error = ApiErrorFromResponse(502, "Bad Gateway\n");
  EXPECT_EQ(error.message, "Bad Gateway");
  Status status = error.ToStatus("GET /api");
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  ApiError back = ErrorDetails(status);
  EXPECT_EQ(back.http_status, 502);
  EXPECT_EQ(back.reason, "");
  EXPECT_EQ(back.message, "Bad Gateway");
}

TEST(ApiErrorTest, DetailsOfAnotherStatusHaveNoHttpCode) {
  ApiError back = ErrorDetails(Unavailable("GET /api to https://x: Connection refused"));
  EXPECT_EQ(back.http_status, 0);
  EXPECT_EQ(back.message, "GET /api to https://x: Connection refused");
  EXPECT_FALSE(IsGone(Unavailable("x")));
}

TEST(ApiErrorTest, EmptyBodyGetsAMessage) {
  ApiError error = ApiErrorFromResponse(500, "");
  EXPECT_EQ(error.message, "HTTP 500");
}

TEST(ApiErrorTest, CodeTable) {
  EXPECT_EQ(CodeForHttpStatus(400, "BadRequest"), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeForHttpStatus(422, "Invalid"), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeForHttpStatus(401, "Unauthorized"), StatusCode::kPermissionDenied);
  EXPECT_EQ(CodeForHttpStatus(403, "Forbidden"), StatusCode::kPermissionDenied);
  EXPECT_EQ(CodeForHttpStatus(404, "NotFound"), StatusCode::kNotFound);
  EXPECT_EQ(CodeForHttpStatus(409, "Conflict"), StatusCode::kConflict);
  EXPECT_EQ(CodeForHttpStatus(409, "AlreadyExists"), StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeForHttpStatus(410, "Expired"), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeForHttpStatus(429, "TooManyRequests"), StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeForHttpStatus(504, "Timeout"), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(CodeForHttpStatus(503, ""), StatusCode::kUnavailable);
  EXPECT_EQ(CodeForHttpStatus(0, ""), StatusCode::kUnavailable);
}

TEST(ApiErrorTest, GoneIsRecognised) {
  Status status = ApiError{.http_status = 410, .reason = "Expired", .message = "too old"}.ToStatus(
      "watch /api/v1/pods");
  EXPECT_TRUE(IsGone(status));
}

}  // namespace
}  // namespace tessera::kube
