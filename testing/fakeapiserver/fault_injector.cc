#include "fakeapiserver/fault_injector.h"

#include <string>
#include <thread>

namespace tessera::testing {

void FaultInjector::FailNext(int count, int status, int retry_after_seconds) {
  std::lock_guard lock(mu_);
  fail_count_ = count;
  fail_status_ = status;
  retry_after_ = retry_after_seconds;
}

void FaultInjector::SetLatency(std::chrono::milliseconds latency) {
  std::lock_guard lock(mu_);
  latency_ = latency;
}

std::optional<FaultInjector::Failure> FaultInjector::Intercept() {
  std::chrono::milliseconds latency;
  std::optional<Failure> failure;
  {
    std::lock_guard lock(mu_);
    latency = latency_;
    if (fail_count_ > 0) {
      --fail_count_;
      std::string message = fail_status_ == 429
                                ? "Too many requests, please try again later."
                                : "injected failure (fake API server fault injection)";
      ApiError error = ErrorForCode(fail_status_, message);
      if (retry_after_ > 0) error.details = {{"retryAfterSeconds", retry_after_}};
      failure = Failure{std::move(error), retry_after_};
    }
  }
  if (latency.count() > 0) std::this_thread::sleep_for(latency);
  return failure;
}

}  // namespace tessera::testing
