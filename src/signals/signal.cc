#include "gpuscaler/signals/signal.h"

#include <cmath>

#include "gpuscaler/model/text.h"

namespace gpuscaler::signals {

std::string_view ToString(SignalState state) {
  static constexpr EnumName<SignalState> kNames[] = {
      {SignalState::kOk, "ok"}, {SignalState::kStale, "stale"}, {SignalState::kMissing, "missing"}};
  return NameOf(state, kNames, "missing");
}

SignalReading MakeReading(std::string source, std::string key, double value, WallTime observed_at) {
  SignalReading r;
  r.source = std::move(source);
  r.key = std::move(key);
  r.observed_at = observed_at;
  if (std::isnan(value)) {
    r.state = SignalState::kMissing;
    r.error = "value is NaN";
    return r;
  }
  r.value = value;
  r.state = SignalState::kOk;
  return r;
}

SignalReading MakeMissingReading(std::string source, std::string key, std::string error) {
  SignalReading r;
  r.source = std::move(source);
  r.key = std::move(key);
  r.state = SignalState::kMissing;
  r.error = std::move(error);
  return r;
}

Seconds MaxStaleness(const SignalsPolicy& policy, std::string_view source) {
  auto it = policy.max_staleness.find(std::string(source));
  return it == policy.max_staleness.end() ? kDefaultMaxStaleness : it->second;
}

std::optional<Seconds> Age(const SignalReading& reading, WallTime now) {
  if (!reading.observed_at.has_value()) return std::nullopt;
  Seconds age = now - *reading.observed_at;
  return age < Seconds(0) ? Seconds(0) : age;
}

SignalReading JudgeFreshness(SignalReading reading, const SignalsPolicy& policy, WallTime now) {
  if (!reading.value.has_value() || std::isnan(*reading.value)) {
    reading.state = SignalState::kMissing;
    if (reading.error.empty()) reading.error = reading.value.has_value() ? "value is NaN" : "no value";
    return reading;
  }
  if (!reading.observed_at.has_value()) {
    reading.state = SignalState::kMissing;
    if (reading.error.empty()) reading.error = "no observation time";
    return reading;
  }
  Seconds max_age = MaxStaleness(policy, reading.source);
  Seconds age = now - *reading.observed_at;
  if (age > max_age) {
    reading.state = SignalState::kStale;
    reading.error = "age " + FormatDuration(age) + " > max " + FormatDuration(max_age);
    return reading;
  }
  if (-age > max_age) {
    reading.state = SignalState::kStale;
    reading.error = "observed " + FormatDuration(-age) + " in the future (> max " + FormatDuration(max_age) + ")";
    return reading;
  }
  reading.state = SignalState::kOk;
  reading.error.clear();
  return reading;
}

Error HttpStatusError(std::string_view source, int http_status, std::string_view body) {
  std::string message = std::string(source) + ": HTTP " + std::to_string(http_status);
  if (!body.empty()) {
    constexpr size_t kMaxBody = 200;
    message += ": ";
    message += body.substr(0, kMaxBody);
    if (body.size() > kMaxBody) message += "...";
  }
  if (http_status == 401 || http_status == 403) return Error::Auth(std::move(message));
  if (http_status == 404) return Error::NotFound(std::move(message));
  if (http_status == 429) return Error::Throttled(std::move(message));
  if (http_status >= 400 && http_status < 500) return Error::InvalidInput(std::move(message));
  return Error::Transient(std::move(message));
}

}  // namespace gpuscaler::signals
