#include "gpuscaler/controller/spot_risk.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace gpuscaler {

SpotRiskLearner::SpotRiskLearner(const OfferingBook& book, SpotRiskOptions options)
    : options_(options), estimator_(options.estimator) {
  prior_rate_.reserve(book.offerings().size());
  for (const Offering& o : book.offerings()) prior_rate_.push_back(o.interruptions_per_hour);
  unflushed_exposure_h_.assign(book.offerings().size(), 0.0);
}

double SpotRiskLearner::HoursSinceLastExposure(WallTime now) {
  if (!last_exposure_) {
    last_exposure_ = now;
    return 0;
  }
  const double dt = std::chrono::duration<double>(now - *last_exposure_).count();
  last_exposure_ = now;
  return dt <= 0 ? 0 : dt / 3600.0;
}

void SpotRiskLearner::FlushExposure(const OfferingBook& book, WallTime now) {
  for (size_t i = 0; i < unflushed_exposure_h_.size(); ++i) {
    if (unflushed_exposure_h_[i] <= 0) continue;
    estimator_.AddExposure(book.key(i), book.risk_group(i), unflushed_exposure_h_[i], now);
    unflushed_exposure_h_[i] = 0;
  }
}

void SpotRiskLearner::RecordNotice(const OfferingBook& book, size_t offering, int group_nodes, WallTime now) {
  if (!options_.learn) return;
  // Exposure up to now first, so the event is weighed against it.
  FlushExposure(book, now);
  estimator_.RecordInterruption(book.key(offering), book.risk_group(offering), now);
  CloseBursts(now);
  auto [burst, opened] = open_bursts_.try_emplace(book.risk_group(offering));
  if (opened) burst->second = {now, std::max(1, group_nodes), 0};
  ++burst->second.noticed;
  dirty_ = true;
}

void SpotRiskLearner::CloseBursts(WallTime now) {
  for (auto it = open_bursts_.begin(); it != open_bursts_.end();) {
    const ReclaimBurst& b = it->second;
    if (now - b.start <= kReclaimWaveWindow) {
      ++it;
      continue;
    }
    if (b.group_nodes >= 2) {
      CoReclaims& c = co_reclaims_[it->first];
      c.together += std::min(b.noticed, b.group_nodes) - 1;
      c.chances += b.group_nodes - 1;
    }
    it = open_bursts_.erase(it);
  }
}

double SpotRiskLearner::CoReclaimShare(const std::string& risk_group) const {
  auto it = co_reclaims_.find(risk_group);
  return it == co_reclaims_.end() ? 0 : it->second.together / (1 + it->second.chances);
}

void SpotRiskLearner::AddHistory(const OfferingBook& book, size_t offering, WallTime from, WallTime to,
                                 bool interrupted, WallTime now) {
  if (!options_.learn) return;
  estimator_.AddHistory(book.key(offering), book.risk_group(offering), from, to, interrupted, now);
  dirty_ = true;
}

SpotRiskLearner::Moves SpotRiskLearner::Refresh(OfferingBook& book, WallTime now) {
  Moves moved;
  if (!options_.learn) return moved;
  const bool due = !last_refresh_ || now - *last_refresh_ >= options_.refresh_interval;
  if (!dirty_ && !due) return moved;
  FlushExposure(book, now);
  CloseBursts(now);
  last_refresh_ = now;
  dirty_ = false;
  for (size_t i = 0; i < book.offerings().size(); ++i) {
    const Offering& o = book.offerings()[i];
    if (o.capacity_type != CapacityType::kSpot) continue;
    const double share = CoReclaimShare(book.risk_group(i));
    if (std::abs(share - o.co_reclaim_share) > 0.05) {
      book.SetCoReclaimShare(i, share);
      moved.shares = true;
    }
    const double rate = estimator_.Rate(book.key(i), book.risk_group(i), prior_rate_[i], now);
    const double old = o.interruptions_per_hour;
    // Small moves are not news: the plan would barely change, and every
    // changed snapshot costs a planner call. Below 0.001 interruptions per
    // node-hour a move changes the expected cost of an hour's lost work by
    // less than 0.1 % of the on-demand price: not worth a replan either.
    if (std::abs(rate - old) <= std::max(0.05 * std::max(rate, old), 0.001)) continue;
    book.SetInterruptionRate(i, rate);
    moved.rates = true;
  }
  return moved;
}

}  // namespace gpuscaler
