#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

namespace tessera::kube {
namespace {

using Clock = RateLimiter::Clock;
using std::chrono::milliseconds;

TEST(RateLimiterTest, BurstIsFreeThenTokensArriveAtQps) {
  RateLimiter limiter(/*qps=*/10, /*burst=*/3);
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.Reserve(t0), Clock::duration::zero()) << i;
  // Bucket empty: the 4th waits 100 ms, the 5th 200 ms (reservations queue up).
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(limiter.Reserve(t0)), milliseconds(100));
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(limiter.Reserve(t0)), milliseconds(200));
}

TEST(RateLimiterTest, RefillsOverTimeButNotBeyondBurst) {
  RateLimiter limiter(/*qps=*/10, /*burst=*/2);
  Clock::time_point t0 = Clock::now();
  EXPECT_EQ(limiter.Reserve(t0), Clock::duration::zero());
  EXPECT_EQ(limiter.Reserve(t0), Clock::duration::zero());
  // Ten seconds later at most `burst` tokens are waiting.
  Clock::time_point later = t0 + std::chrono::seconds(10);
  EXPECT_EQ(limiter.Reserve(later), Clock::duration::zero());
  EXPECT_EQ(limiter.Reserve(later), Clock::duration::zero());
  EXPECT_GT(limiter.Reserve(later), Clock::duration::zero());
}

TEST(RateLimiterTest, SustainedRateMatchesQps) {
  RateLimiter limiter(/*qps=*/50, /*burst=*/1);
  // Each caller sleeps its wait: 101 requests take 100 / 50 = 2 s of simulated time.
  Clock::time_point t0 = Clock::now(), t = t0;
  for (int i = 0; i < 101; ++i) t += limiter.Reserve(t);
  EXPECT_NEAR(std::chrono::duration<double>(t - t0).count(), 2.0, 0.01);
}

TEST(RateLimiterTest, ZeroQpsMeansUnlimited) {
  RateLimiter limiter(0, 1);
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(limiter.Reserve(t0), Clock::duration::zero());
}

TEST(RateLimiterTest, WaitSleepsForTheToken) {
  RateLimiter limiter(/*qps=*/20, /*burst=*/1);
  auto start = Clock::now();
  limiter.Wait();  // free
  limiter.Wait();  // ~50 ms
  limiter.Wait();  // ~100 ms
  EXPECT_GE(Clock::now() - start, milliseconds(90));
}

}  // namespace
}  // namespace tessera::kube
