#include "annotations/resize.h"

#include <gtest/gtest.h>

namespace tessera::annotations {
namespace {

TEST(ResizeAnnotations, RequestRoundTrips) {
  ResizeRequest r{.id = "4f1c", .container = "main", .memory_mib = 8192, .cores = 40};
  Result<ResizeRequest> back = ParseResizeRequest(ResizeRequestToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, r);
  ResizeRequest memory_only{.id = "x", .container = "c", .memory_mib = 1};
  EXPECT_EQ(*ParseResizeRequest(ResizeRequestToJson(memory_only)), memory_only);
}

TEST(ResizeAnnotations, RequestErrorsSayWhatIsAllowed) {
  auto error = [](const char* text) { return ParseResizeRequest(text).status().message(); };
  EXPECT_NE(error(R"({"id":"a","container":"c","cores":40})").find("\"version\" must be 1"),
            std::string::npos);
  EXPECT_NE(error(R"({"version":1,"id":"a","container":"c"})").find("asks for nothing"),
            std::string::npos);
  EXPECT_NE(error(R"({"version":1,"id":"a","container":"c","cores":150})")
                .find("\"cores\" 150 is not allowed: compute percent per GPU, 1 to 100"),
            std::string::npos);
  EXPECT_NE(error(R"({"version":1,"id":"a","container":"c","cores":0})").find("1 to 100"),
            std::string::npos);
  EXPECT_NE(error(R"({"version":1,"id":"a","container":"c","memoryMiB":0})").find("at least 1"),
            std::string::npos);
  EXPECT_NE(error(R"({"version":1,"id":"a","container":"c","memoryMiB":-5})").find("at least 1"),
            std::string::npos);
  // 2^64 - 4096 MiB would wrap the scheduler's sums and the node's byte limit.
  EXPECT_NE(error(R"({"version":1,"id":"a","container":"c","memoryMiB":18446744073709547520})")
                .find("\"memoryMiB\" 18446744073709547520 is not allowed: give the memory per "
                      "GPU in MiB, 1 to 16777216"),
            std::string::npos);
  EXPECT_TRUE(
      ParseResizeRequest(R"({"version":1,"id":"a","container":"c","memoryMiB":16777216})").ok());
  EXPECT_NE(error(R"({"version":1,"id":"","container":"c","cores":5})").find("\"id\" must be"),
            std::string::npos);
  EXPECT_NE(error(R"({"version":1,"id":"a","cores":5})").find("\"container\" is missing"),
            std::string::npos);
  EXPECT_EQ(error("nope").rfind("tessera.io/resize is not valid JSON", 0), 0u);
}

TEST(ResizeAnnotations, StatusRoundTrips) {
  ResizeStatus s{.id = "4f1c",
                 .container = "main",
                 .granted = true,
                 .memory_mib = 8192,
                 .cores = 40,
                 .message = "grown",
                 .time = "2026-12-06T05:00:00Z"};
  Result<ResizeStatus> back = ParseResizeStatus(ResizeStatusToJson(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(ParseResizeStatus(R"({"version":1,"granted":true})").ok());
}

}  // namespace
}  // namespace tessera::annotations
