#include "kube/backoff.h"

#include <algorithm>

namespace tessera::kube {

Backoff::Backoff(Options options, uint64_t seed)
    : options_(options), current_ms_(static_cast<double>(options.initial.count())), random_(seed) {
  options_.factor = std::max(1.0, options_.factor);
  options_.jitter = std::clamp(options_.jitter, 0.0, 0.99);
}

Backoff::Duration Backoff::Next() {
  const double max_ms = static_cast<double>(options_.max.count());
  double base = std::min(current_ms_, max_ms);
  current_ms_ = std::min(current_ms_ * options_.factor, max_ms);
  std::uniform_real_distribution<double> spread(1.0 - options_.jitter, 1.0 + options_.jitter);
  double delay = base * spread(random_);
  return Duration(static_cast<int64_t>(delay));
}

void Backoff::Reset() {
  current_ms_ = static_cast<double>(options_.initial.count());
}

}  // namespace tessera::kube
