#include "log/log_limiter.h"

#include <gtest/gtest.h>

namespace tessera::log {
namespace {

TEST(LogLimiter, BadRequestsInALoopCannotFloodTheLog) {
  LogLimiter limiter(3);
  LogLimiter::Clock::time_point t0{};
  uint64_t dropped = 99;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Allow(t0 + std::chrono::seconds(i), &dropped));
  EXPECT_EQ(dropped, 0u);
  for (int i = 0; i < 1000; ++i)
    EXPECT_FALSE(limiter.Allow(t0 + std::chrono::seconds(10), &dropped));
  // A minute later lines pass again, and the first one says how many were left out.
  EXPECT_TRUE(limiter.Allow(t0 + std::chrono::seconds(61), &dropped));
  EXPECT_EQ(dropped, 1000u);
}

}  // namespace
}  // namespace tessera::log
