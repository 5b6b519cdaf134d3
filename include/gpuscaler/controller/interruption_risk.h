// Learned spot interruption risk: an estimate of each spot offering's
// interruption hazard (interruptions per node-hour) from what the controller
// observes, with the catalog's (or spot advisor's) rate as the prior.
//
// The model is Gamma–Poisson with forgetting. For an offering with decayed
// evidence E interruptions over T node-hours of spot exposure and a prior
// rate r0 worth `prior_node_hours` (β0) of exposure:
//
//     rate = (r0·β0 + E) / (β0 + T)
//
// With no evidence the rate is the prior, exactly. Evidence loses half its
// weight every `half_life` (events and exposure alike), so a market that
// calms down is trusted again and one that turns stormy is noticed within
// hours. Each offering also belongs to a group (the controller uses instance
// family × zone: sizes of one family in one zone tend to lose capacity
// together); the group's posterior, computed the same way from the evidence
// of all its offerings, replaces r0 as the offering's prior with weight
// `group_node_hours` (β1), so an offering the controller never ran inherits
// what its siblings taught: rate = (g·β1 + E)/(β1 + T), g the group rate.
// `group_node_hours` 0 turns the pooling off.
//
// Deterministic: time only comes in as arguments (no clock reads). Values
// only; not thread-safe.
#pragma once

#include <map>
#include <string>

#include "gpuscaler/model/time.h"

namespace gpuscaler {

struct InterruptionRiskOptions {
  // β0: how many node-hours of exposure the prior rate is worth.
  double prior_node_hours = 24;
  // β1: how many node-hours the group's posterior is worth as an offering's
  // prior (0: no pooling, the catalog rate is every offering's prior).
  double group_node_hours = 12;
  // Evidence (events and exposure) loses half its weight in this time
  // (0: never; for tests).
  Seconds half_life{Seconds(48 * 3600)};
};

class InterruptionRiskEstimator {
 public:
  // Decayed evidence of one offering or group, as of `as_of`.
  struct Evidence {
    double interruptions = 0;
    double node_hours = 0;
    WallTime as_of{};
  };

  explicit InterruptionRiskEstimator(InterruptionRiskOptions options = {});

  // `node_hours` of spot exposure of offering `key` (in group `group`),
  // observed up to `at`. Negative or zero hours are ignored.
  void AddExposure(const std::string& key, const std::string& group, double node_hours, WallTime at);
  // One node of `key` received an interruption notice at `at`.
  void RecordInterruption(const std::string& key, const std::string& group, WallTime at);
  // History (rebuilding after a restart): one node of `key` was on spot over
  // [from, to) and, with `interrupted`, was reclaimed at `to`. Weighs the
  // interval as if it had been observed as it happened, decayed to `now`
  // (which must not precede the evidence already held; to <= now).
  void AddHistory(const std::string& key, const std::string& group, WallTime from, WallTime to,
                  bool interrupted, WallTime now);

  // The estimated interruptions per node-hour of `key` at `now`, given the
  // catalog's `prior_per_hour` (>= 0).
  double Rate(const std::string& key, const std::string& group, double prior_per_hour, WallTime now) const;
  // The decayed evidence of `key` (or of a group, with its group name) at
  // `now`; zeros when nothing was observed.
  Evidence EvidenceFor(const std::string& key, WallTime now) const;
  Evidence GroupEvidenceFor(const std::string& group, WallTime now) const;

  const InterruptionRiskOptions& options() const { return options_; }

 private:
  // Multiplies the evidence by the decay from its as_of to `t` (t >= as_of;
  // an earlier t leaves it as it is: evidence is never "undecayed").
  void DecayTo(Evidence* e, WallTime t) const;
  double Factor(WallTime from, WallTime to) const;
  Evidence DecayedAt(const std::map<std::string, Evidence>& held, const std::string& name, WallTime now) const;

  InterruptionRiskOptions options_;
  std::map<std::string, Evidence> offerings_;
  std::map<std::string, Evidence> groups_;
};

}  // namespace gpuscaler
