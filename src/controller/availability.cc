#include "gpuscaler/controller/availability.h"

#include <algorithm>
#include <cstdint>

namespace gpuscaler {

Seconds OfferingAvailability::BackoffFor(int streak) const {
  Seconds d = base_;
  for (int i = 1; i < streak && d < max_; ++i) d *= 2;
  return std::min(d, max_);
}

void OfferingAvailability::RecordCapacityError(const std::string& offering_key, WallTime now) {
  Mark& m = marks_[offering_key];
  // The streak decays back: one level is forgotten for every max_backoff
  // that passed since the last pause ended without a new error, so an
  // offering that failed in a shortage long ago starts with a short pause.
  if (m.streak > 0 && now > m.until && max_.count() > 0) {
    const auto quiet_periods = static_cast<int>(std::min<int64_t>((now - m.until) / max_, m.streak));
    m.streak -= quiet_periods;
  }
  m.streak += 1;
  m.until = std::max(m.until, now + BackoffFor(m.streak));
}

void OfferingAvailability::RecordSuccess(const std::string& offering_key) {
  auto it = marks_.find(offering_key);
  if (it == marks_.end()) return;
  it->second.streak /= 2;
  if (it->second.streak == 0) marks_.erase(it);
}

bool OfferingAvailability::IsAvailable(const std::string& offering_key, WallTime now) const {
  auto it = marks_.find(offering_key);
  return it == marks_.end() || now >= it->second.until;
}

int OfferingAvailability::ErrorStreak(const std::string& offering_key) const {
  auto it = marks_.find(offering_key);
  return it == marks_.end() ? 0 : it->second.streak;
}

std::vector<std::string> OfferingAvailability::Unavailable(WallTime now) const {
  std::vector<std::string> out;
  for (const auto& [key, mark] : marks_) {
    if (now < mark.until) out.push_back(key);
  }
  return out;
}

}  // namespace gpuscaler
