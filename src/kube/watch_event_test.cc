#include "kube/watch_event.h"

#include <gtest/gtest.h>

#include "kube/api_error.h"

namespace tessera::kube {
namespace {

TEST(WatchEventTest, ParsesEachType) {
  for (const char* type : {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}) {
    std::string line = std::string(R"({"type":")") + type +
                       R"(","object":{"metadata":{"name":"p","resourceVersion":"9"}}})";
    Result<WatchEvent> event = ParseWatchEvent(line);
    ASSERT_TRUE(event.ok()) << event.status().ToString();
    EXPECT_STREQ(WatchEventTypeName(event->type), type);
    EXPECT_EQ(ResourceVersionOf(event->object), "9");
  }
}

TEST(WatchEventTest, RejectsMalformedLines) {
  EXPECT_EQ(ParseWatchEvent("{not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseWatchEvent(R"({"object":{}})").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseWatchEvent(R"({"type":"ADDED"})").status().code(), StatusCode::kInvalidArgument);
  Result<WatchEvent> odd = ParseWatchEvent(R"({"type":"RENAMED","object":{}})");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("\"RENAMED\""), std::string::npos);
}

TEST(WatchEventTest, ExpiredErrorEventIsGone) {
  Result<WatchEvent> event = ParseWatchEvent(
      R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",
         "message":"too old resource version: 5 (90)","reason":"Expired","code":410}})json");
  ASSERT_TRUE(event.ok());
  Status status = ErrorStatusOf(*event, "watch /api/v1/pods");
  EXPECT_TRUE(IsGone(status));
  EXPECT_EQ(ErrorDetails(status).reason, "Expired");
  EXPECT_EQ(ErrorDetails(status).message, "too old resource version: 5 (90)");
}

TEST(WatchEventTest, ErrorEventWithoutCodeIsAServerError) {
  Result<WatchEvent> event = ParseWatchEvent(R"({"type":"ERROR","object":{"message":"boom"}})");
  ASSERT_TRUE(event.ok());
  Status status = ErrorStatusOf(*event, "watch");
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(IsGone(status));
}

}  // namespace
}  // namespace tessera::kube
