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

Seconds OfferingAvailability::ReclaimCooldownFor(int wave, ReclaimCooldown cooldown) {
  const Seconds max = std::max(cooldown.first, cooldown.max);
  Seconds d = cooldown.first;
  for (int i = 1; i < wave && d < max; ++i) d *= 2;
  return std::min(d, max);
}

bool OfferingAvailability::RecordReclaimNotice(const std::string& offering_key, int pool_nodes, WallTime now,
                                               ReclaimCooldown cooldown) {
  Reclaim& r = reclaims_[offering_key];
  while (!r.notices.empty() && now - r.notices.front() > kReclaimWaveWindow) r.notices.erase(r.notices.begin());
  if (r.notices.empty()) r.pool_nodes = std::max(1, pool_nodes);
  r.notices.push_back(now);
  // Notices within the window of a wave already marked belong to it.
  if (r.waves > 0 && now - r.wave_at <= kReclaimWaveWindow) return false;
  const int n = static_cast<int>(r.notices.size());
  if (n < 2 && 2 * n < r.pool_nodes) return false;
  if (r.waves > 0 && now >= r.until + kReclaimQuietReset) r.waves = 0;
  r.waves += 1;
  r.wave_at = now;
  r.until = std::max(r.until, now + ReclaimCooldownFor(r.waves, cooldown));
  return true;
}

std::map<std::string, WallTime> OfferingAvailability::Reclaimed(WallTime now) const {
  std::map<std::string, WallTime> out;
  for (const auto& [key, r] : reclaims_) {
    if (r.waves > 0 && now < r.until) out.emplace(key, r.until);
  }
  return out;
}

int OfferingAvailability::ReclaimWaves(const std::string& offering_key) const {
  auto it = reclaims_.find(offering_key);
  return it == reclaims_.end() ? 0 : it->second.waves;
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
