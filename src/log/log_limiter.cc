#include "log/log_limiter.h"

namespace tessera::log {

bool LogLimiter::Allow(Clock::time_point now, uint64_t* dropped) {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_window_ == 0 || now - window_start_ >= std::chrono::minutes(1)) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= per_minute_) {
    ++dropped_;
    return false;
  }
  ++in_window_;
  *dropped = dropped_;
  dropped_ = 0;
  return true;
}

}  // namespace tessera::log
