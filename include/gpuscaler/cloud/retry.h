// How the cloud API clients (AwsClient, GcpClient) retry: the policy, and
// the state of one client's retries: capped exponential backoff with full
// jitter from a seeded RNG, and counts of calls and retries. Not
// thread-safe (it belongs to one client, used by one caller at a time).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>

#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

struct RetryPolicy {
  int max_attempts = 5;                          // first try included
  std::chrono::milliseconds base{200};           // first backoff ceiling
  std::chrono::milliseconds cap{20000};          // no backoff longer than this
  std::chrono::milliseconds throttle_base{1000};  // ceiling after a throttle
};

// Waits (std::this_thread::sleep_for in the daemon; records in tests).
using SleepFn = std::function<void(std::chrono::milliseconds)>;

class Retrier {
 public:
  Retrier(const RetryPolicy& policy, uint64_t seed, SleepFn sleep)
      : policy_(policy), sleep_(std::move(sleep)), rng_(seed) {}

  // How many attempts a call makes at most (at least one).
  int max_attempts() const { return policy_.max_attempts > 0 ? policy_.max_attempts : 1; }
  // Called before each attempt (0 first): counts the call and, from the
  // second on, counts a retry and sleeps uniformly in [0, min(cap, ceiling *
  // 2^(attempt-1))], the ceiling being throttle_base when `last` (the error
  // of the attempt before) is kThrottled, else base.
  void BeforeAttempt(int attempt, const std::optional<Error>& last);
  // Sleeps through the SleepFn (none: returns at once).
  void Sleep(std::chrono::milliseconds d) const {
    if (sleep_) sleep_(d);
  }
  int calls() const { return calls_; }
  int retries() const { return retries_; }

 private:
  RetryPolicy policy_;
  SleepFn sleep_;
  std::mt19937_64 rng_;
  int calls_ = 0;
  int retries_ = 0;
};

}  // namespace gpuscaler::cloud
