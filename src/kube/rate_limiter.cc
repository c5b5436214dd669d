#include "kube/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace tessera::kube {

RateLimiter::RateLimiter(double qps, int burst)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(std::max(1, burst)) {}

RateLimiter::Clock::duration RateLimiter::Reserve(Clock::time_point now) {
  if (qps_ <= 0) return Clock::duration::zero();
  std::lock_guard lock(mutex_);
  if (!started_) {
    started_ = true;
    last_ = now;
  }
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1.0;
  if (tokens_ >= 0) return Clock::duration::zero();
  // The token is due when the deficit has been refilled.
  std::chrono::duration<double> wait(-tokens_ / qps_);
  return std::chrono::duration_cast<Clock::duration>(wait);
}

void RateLimiter::Wait() {
  Clock::duration wait = Reserve(Clock::now());
  if (wait > Clock::duration::zero()) std::this_thread::sleep_for(wait);
}

}  // namespace tessera::kube
