#include "kube/backoff.h"

#include <gtest/gtest.h>

namespace tessera::kube {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, GrowsExponentiallyUpToTheCapWithoutJitter) {
  Backoff backoff(
      {.initial = milliseconds(100), .max = milliseconds(1000), .factor = 2, .jitter = 0});
  EXPECT_EQ(backoff.Next(), milliseconds(100));
  EXPECT_EQ(backoff.Next(), milliseconds(200));
  EXPECT_EQ(backoff.Next(), milliseconds(400));
  EXPECT_EQ(backoff.Next(), milliseconds(800));
  EXPECT_EQ(backoff.Next(), milliseconds(1000));
  EXPECT_EQ(backoff.Next(), milliseconds(1000));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), milliseconds(100));
}

TEST(BackoffTest, JitterStaysWithinItsBandAndVaries) {
  Backoff backoff(
      {.initial = milliseconds(1000), .max = milliseconds(1000), .factor = 2, .jitter = 0.2},
      /*seed=*/42);
  bool varied = false;
  milliseconds first = backoff.Next();
  for (int i = 0; i < 100; ++i) {
    milliseconds d = backoff.Next();
    EXPECT_GE(d, milliseconds(800));
    EXPECT_LE(d, milliseconds(1200));
    if (d != first) varied = true;
  }
  EXPECT_TRUE(varied);
}

TEST(BackoffTest, SameSeedSameDelays) {
  Backoff::Options options{.initial = milliseconds(50), .max = milliseconds(5000)};
  Backoff a(options, 7), b(options, 7);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.Next(), b.Next());
}

TEST(BackoffTest, FactorBelowOneIsTreatedAsOne) {
  Backoff backoff(
      {.initial = milliseconds(100), .max = milliseconds(1000), .factor = 0.5, .jitter = 0});
  EXPECT_EQ(backoff.Next(), milliseconds(100));
  EXPECT_EQ(backoff.Next(), milliseconds(100));
}

}  // namespace
}  // namespace tessera::kube
