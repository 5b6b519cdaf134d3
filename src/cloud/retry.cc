#include "gpuscaler/cloud/retry.h"

#include <algorithm>

namespace gpuscaler::cloud {

void Retrier::BeforeAttempt(int attempt, const std::optional<Error>& last) {
  if (attempt > 0) {
    // Full jitter: uniform in [0, min(cap, ceiling * 2^(attempt-1))].
    const bool throttled = last && last->category() == ErrorCategory::kThrottled;
    const auto base = throttled ? policy_.throttle_base : policy_.base;
    const int64_t ceiling = std::min<int64_t>(policy_.cap.count(), base.count() << std::min(attempt - 1, 20));
    std::uniform_int_distribution<int64_t> jitter(0, std::max<int64_t>(ceiling, 0));
    ++retries_;
    Sleep(std::chrono::milliseconds(jitter(rng_)));
  }
  ++calls_;
}

}  // namespace gpuscaler::cloud
