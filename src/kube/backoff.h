// Backoff: exponential delays with jitter, for reconnecting watches and retrying calls.
//
// Next() returns initial, then initial*factor, ... capped at max; each delay is then spread by
// +/- jitter (a fraction, 0.2 = 20%) so that many clients that failed together do not retry
// together. Reset() after a success starts again from initial. The random source is seeded by the
// caller, so tests are repeatable. Not thread-safe: one Backoff per retry loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace tessera::kube {

class Backoff {
 public:
  using Duration = std::chrono::milliseconds;

  struct Options {
    Duration initial{200};
    Duration max{30'000};
    double factor = 2.0;  // >= 1
    double jitter = 0.2;  // in [0, 1)
  };

  explicit Backoff(Options options, uint64_t seed = std::random_device{}());

  // The delay before the next attempt.
  Duration Next();
  void Reset();

 private:
  Options options_;
  double current_ms_;
  std::mt19937_64 random_;
};

}  // namespace tessera::kube
