// SignalReading: one value read from a signal source (a queue depth, a GPU
// utilization), with when it was observed and whether it may be used.
//
// The control loop fails static: a reading that is stale (older than the
// policy's signals.max_staleness for its source) or missing blocks
// scale-down for the classes that depend on it. Neither ever reads as zero:
// UsableValue() is empty for them. Value type; pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler::signals {

enum class SignalState {
  kOk,       // a value, fresh enough to act on
  kStale,    // a value, but older than the source's max staleness
  kMissing,  // no value: the source failed, or answered without one
};

std::string_view ToString(SignalState state);

// Max staleness used for a source the policy does not name.
inline constexpr Seconds kDefaultMaxStaleness{120};

struct SignalReading {
  std::string source;  // "prometheus" | "rabbitmq" | "dcgm" | "kubernetes" | "prices"
  std::string key;     // what was read: the PromQL, "vhost/queue", "hostname"...
  std::optional<double> value;  // last value seen, kept for audit even when stale
  std::optional<WallTime> observed_at;  // when the source measured it
  SignalState state = SignalState::kMissing;
  std::string error;  // why missing or stale; empty when ok

  // The value the control loop may act on: only when state is kOk.
  std::optional<double> UsableValue() const {
    return state == SignalState::kOk ? value : std::nullopt;
  }
  bool ok() const { return state == SignalState::kOk; }
};

// A reading of `value` observed at `observed_at`, state kOk until judged.
// A NaN value makes a kMissing reading: a NaN is not a measurement.
SignalReading MakeReading(std::string source, std::string key, double value, WallTime observed_at);
// A kMissing reading carrying why (e.g. the source's Error::ToString()).
SignalReading MakeMissingReading(std::string source, std::string key, std::string error);

// The max staleness the policy sets for `source`, kDefaultMaxStaleness when
// it names none.
Seconds MaxStaleness(const SignalsPolicy& policy, std::string_view source);

// Judges `reading` at `now` against the policy and returns it with its state
// and error set:
//  - no value, or a NaN value: kMissing (error kept, or "no value");
//  - no observed_at: kMissing ("no observation time");
//  - age = now - observed_at > max staleness: kStale ("age 3m > max 2m");
//    an age equal to the limit is still fresh;
//  - observed more than max staleness in the future (a clock far off):
//    kStale; a smaller skew counts as age zero;
//  - otherwise kOk and the error cleared.
// The value is never changed, so a stale reading keeps its last value for
// the audit row; UsableValue() is empty unless kOk.
SignalReading JudgeFreshness(SignalReading reading, const SignalsPolicy& policy, WallTime now);

// How old a reading is at `now` (zero when observed in the future); empty
// without an observation time.
std::optional<Seconds> Age(const SignalReading& reading, WallTime now);

// Maps a failed HTTP exchange with a signal source to an Error category:
// 401/403 kAuth, 404 kNotFound, 429 kThrottled, other 4xx kInvalidInput,
// 5xx and anything else kTransient. The message names the source and the
// status and carries up to 200 bytes of the body.
Error HttpStatusError(std::string_view source, int http_status, std::string_view body);

}  // namespace gpuscaler::signals
