#include "gpuscaler/controller/interruption_risk.h"

#include <algorithm>
#include <cmath>

namespace gpuscaler {
namespace {

double Hours(Seconds s) { return static_cast<double>(s.count()) / 3600.0; }

}  // namespace

InterruptionRiskEstimator::InterruptionRiskEstimator(InterruptionRiskOptions options) : options_(options) {
  options_.prior_node_hours = std::max(options_.prior_node_hours, 1e-9);
  options_.group_node_hours = std::max(options_.group_node_hours, 0.0);
}

double InterruptionRiskEstimator::Factor(WallTime from, WallTime to) const {
  if (to <= from || options_.half_life.count() <= 0) return 1.0;
  return std::exp2(-Hours(to - from) / Hours(options_.half_life));
}

void InterruptionRiskEstimator::DecayTo(Evidence* e, WallTime t) const {
  if (t <= e->as_of) return;
  const double f = Factor(e->as_of, t);
  e->interruptions *= f;
  e->node_hours *= f;
  e->as_of = t;
}

void InterruptionRiskEstimator::AddExposure(const std::string& key, const std::string& group, double node_hours,
                                            WallTime at) {
  if (!(node_hours > 0)) return;
  for (Evidence* e : {&offerings_[key], &groups_[group]}) {
    DecayTo(e, at);
    e->node_hours += node_hours;
  }
}

void InterruptionRiskEstimator::RecordInterruption(const std::string& key, const std::string& group, WallTime at) {
  for (Evidence* e : {&offerings_[key], &groups_[group]}) {
    DecayTo(e, at);
    e->interruptions += 1;
  }
}

void InterruptionRiskEstimator::AddHistory(const std::string& key, const std::string& group, WallTime from,
                                           WallTime to, bool interrupted, WallTime now) {
  to = std::min(to, now);
  // Exposure spread over [from, to) and decayed to now: the integral of
  // 2^(-(now - s)/h) ds, in hours.
  double hours = 0;
  if (to > from) {
    const double h = Hours(options_.half_life);
    if (h > 0) {
      const double k = std::log(2.0) / h;
      hours = (std::exp(-k * Hours(now - to)) - std::exp(-k * Hours(now - from))) / k;
    } else {
      hours = Hours(to - from);
    }
  }
  const double event = interrupted ? Factor(to, now) : 0.0;
  for (Evidence* e : {&offerings_[key], &groups_[group]}) {
    DecayTo(e, now);
    e->node_hours += hours;
    e->interruptions += event;
  }
}

InterruptionRiskEstimator::Evidence InterruptionRiskEstimator::DecayedAt(const std::map<std::string, Evidence>& held,
                                                                         const std::string& name, WallTime now) const {
  auto it = held.find(name);
  if (it == held.end()) return {0, 0, now};
  Evidence e = it->second;
  DecayTo(&e, now);
  return e;
}

InterruptionRiskEstimator::Evidence InterruptionRiskEstimator::EvidenceFor(const std::string& key,
                                                                           WallTime now) const {
  return DecayedAt(offerings_, key, now);
}

InterruptionRiskEstimator::Evidence InterruptionRiskEstimator::GroupEvidenceFor(const std::string& group,
                                                                                WallTime now) const {
  return DecayedAt(groups_, group, now);
}

double InterruptionRiskEstimator::Rate(const std::string& key, const std::string& group, double prior_per_hour,
                                       WallTime now) const {
  prior_per_hour = std::max(prior_per_hour, 0.0);
  const double b0 = options_.prior_node_hours;
  const double b1 = options_.group_node_hours;
  double prior = prior_per_hour;
  if (b1 > 0) {
    const Evidence g = GroupEvidenceFor(group, now);
    prior = (prior_per_hour * b0 + g.interruptions) / (b0 + g.node_hours);
  }
  const Evidence e = EvidenceFor(key, now);
  if (b1 > 0) return (prior * b1 + e.interruptions) / (b1 + e.node_hours);
  return (prior * b0 + e.interruptions) / (b0 + e.node_hours);
}

}  // namespace gpuscaler
