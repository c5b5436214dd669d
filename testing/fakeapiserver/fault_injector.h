// FaultInjector: the failures a test asks the fake API server to produce.
//
//   FailNext(3, 429, 2)  the next 3 API requests get 429 TooManyRequests with Retry-After: 2
//   SetLatency(50ms)     every API request waits 50 ms before it is served
//
// Thread-safe: the state is behind a mutex; Intercept is called from every server thread.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>

#include "fakeapiserver/api_error.h"

namespace tessera::testing {

class FaultInjector {
 public:
  // The next `count` requests fail with `status`; `retry_after_seconds` (> 0) adds a Retry-After
  // header. Replaces any failures still pending.
  void FailNext(int count, int status, int retry_after_seconds);
  void SetLatency(std::chrono::milliseconds latency);

  struct Failure {
    ApiError error;
    int retry_after_seconds = 0;
  };
  // Called once per API request: sleeps for the latency, then returns the failure to answer with
  // (and counts it), if one is pending.
  std::optional<Failure> Intercept();

 private:
  std::mutex mu_;
  int fail_count_ = 0;                    // guarded by mu_
  int fail_status_ = 500;                 // guarded by mu_
  int retry_after_ = 0;                   // guarded by mu_
  std::chrono::milliseconds latency_{0};  // guarded by mu_
};

}  // namespace tessera::testing
