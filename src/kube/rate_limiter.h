// RateLimiter: the client-side token bucket that keeps a client under `qps` requests per second
// on average, with bursts of up to `burst` requests (config keys kube.qps and kube.burst).
//
// The bucket starts full. Every request takes one token; tokens come back at `qps` per second up
// to `burst`. A request that finds the bucket empty waits for its token; waiting requests are
// served in the order they reserved. qps <= 0 turns limiting off. Thread-safe.
//
//   RateLimiter limiter(50, 100);
//   limiter.Wait();  // before each request
#pragma once

#include <chrono>
#include <mutex>

namespace tessera::kube {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  RateLimiter(double qps, int burst);

  // Takes a token at `now` and returns how long the caller must wait before using it (zero when
  // a token was available). The pure core of Wait(), exposed for tests.
  Clock::duration Reserve(Clock::time_point now);

  // Takes a token, sleeping until it is due.
  void Wait();

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  const double qps_;
  const int burst_;

  std::mutex mutex_;
  double tokens_;           // guarded by mutex_; may go negative: reserved, not yet due
  Clock::time_point last_;  // guarded by mutex_; when tokens_ was last brought up to date
  bool started_ = false;    // guarded by mutex_
};

}  // namespace tessera::kube
