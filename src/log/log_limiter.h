// LogLimiter: lets at most `per_minute` log lines of one kind through per minute and counts the
// rest, so that a client sending bad or refused requests in a loop cannot flood the log.
//
//   uint64_t dropped = 0;
//   if (limiter.Allow(Clock::now(), &dropped)) log::Warn("...", {{"suppressed", ...}});
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace tessera::log {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LogLimiter(int per_minute = 20) : per_minute_(per_minute) {}

  // True when a line may be written now; then `*dropped` is the number of lines refused since
  // the last one let through.
  bool Allow(Clock::time_point now, uint64_t* dropped);

 private:
  const int per_minute_;
  std::mutex mu_;
  Clock::time_point window_start_;  // guarded by mu_
  int in_window_ = 0;               // guarded by mu_
  uint64_t dropped_ = 0;            // guarded by mu_
};

}  // namespace tessera::log
